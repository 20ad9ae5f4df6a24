package app

import (
	"time"

	"leadpipe/internal/imports"
	"leadpipe/internal/jobs"
)

// registerImportTasks gives the worker the CSV import's run (marked failed
// when its retries run out) and the sweeper that re-queues imports whose
// task was lost.
func (a *App) registerImportTasks(imp *imports.Service) {
	a.Jobs.Handle(imports.TypeRun, imp.HandleRun)
	a.Jobs.OnFailure(imports.TypeRun, imp.HandleFailure)
	a.Jobs.HandleEvery(imports.TypeSweep, imp.HandleSweep, time.Minute, jobs.QueueLow)
}
