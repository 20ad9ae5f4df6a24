package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"leadpipe/internal/config"
	"leadpipe/internal/jobs"
	"leadpipe/internal/redistest"
)

// TestAsynqFeaturesOnCluster exercises, on a real three-master Cluster,
// every Asynq feature Leadpipe uses or an operator reaches through the
// Inspector/asynqmon, so a limit shows up here rather than in production.
// Findings are in docs/SCALING.md ("Redis Cluster").
func TestAsynqFeaturesOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	target, err := config.ParseRedisURL(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt := jobs.RedisConnOpt(target)
	rc := jobs.NewRedisClient(opt)
	defer rc.Close()
	client := asynq.NewClientFromRedisClient(jobs.NewPipelinedClient(rc, 1, 0))
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	ctx := context.Background()
	step := func(name string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s on Cluster: %v", name, err)
		}
	}
	queues := []string{jobs.QueueCritical, jobs.QueueDefault, jobs.QueueLow}
	nodes := map[string]bool{}
	for _, q := range queues {
		slot, err := insp.ClusterKeySlot(q)
		step("ClusterKeySlot "+q, err)
		ns, err := insp.ClusterNodes(q)
		step("ClusterNodes "+q, err)
		if len(ns) > 0 {
			nodes[ns[0].Addr] = true
			t.Logf("queue %s: slot %d on %s", q, slot, ns[0].Addr)
		}
		_, err = client.EnqueueContext(ctx, asynq.NewTask("probe", []byte("x")), asynq.Queue(q), asynq.TaskID("t1-"+q))
		step("Enqueue with TaskID", err)
		_, err = client.EnqueueContext(ctx, asynq.NewTask("probe", []byte("x")), asynq.Queue(q), asynq.TaskID("t1-"+q))
		if !errors.Is(err, asynq.ErrTaskIDConflict) {
			t.Errorf("TaskID conflict on Cluster: got %v", err)
		}
		_, err = client.EnqueueContext(ctx, asynq.NewTask("probe-unique", []byte("u")), asynq.Queue(q), asynq.Unique(time.Minute))
		step("Enqueue Unique", err)
		_, err = client.EnqueueContext(ctx, asynq.NewTask("probe-unique", []byte("u")), asynq.Queue(q), asynq.Unique(time.Minute))
		if !errors.Is(err, asynq.ErrDuplicateTask) {
			t.Errorf("Unique duplicate on Cluster: got %v", err)
		}
		_, err = client.EnqueueContext(ctx, asynq.NewTask("probe", nil), asynq.Queue(q), asynq.TaskID("later-"+q), asynq.ProcessIn(time.Hour))
		step("Enqueue ProcessIn", err)
		_, err = client.EnqueueContext(ctx, asynq.NewTask("probe", nil), asynq.Queue(q), asynq.Group("g1"))
		step("Enqueue Group", err)
		_, err = insp.GetQueueInfo(q)
		step("GetQueueInfo", err)
		_, err = insp.ListPendingTasks(q)
		step("ListPendingTasks", err)
		step("ArchiveTask", insp.ArchiveTask(q, "t1-"+q))
		_, err = insp.ListArchivedTasks(q)
		step("ListArchivedTasks", err)
		step("RunTask (archived)", insp.RunTask(q, "t1-"+q))
		step("RunTask (scheduled)", insp.RunTask(q, "later-"+q))
		_, err = insp.ArchiveAllPendingTasks(q)
		step("ArchiveAllPendingTasks", err)
		_, err = insp.RunAllArchivedTasks(q)
		step("RunAllArchivedTasks", err)
		step("PauseQueue", insp.PauseQueue(q))
		step("UnpauseQueue", insp.UnpauseQueue(q))
		_, err = insp.History(q, 2)
		step("History", err)
		_, err = insp.Groups(q)
		step("Groups", err)
		_, err = insp.DeleteAllPendingTasks(q)
		step("DeleteAllPendingTasks", err)
	}
	qs, err := insp.Queues()
	step("Queues", err)
	if len(qs) != len(queues) {
		t.Errorf("Queues() = %v", qs)
	}
	_, err = insp.Servers()
	step("Servers", err)
	t.Logf("the %d queues live on %d of the %d masters (a queue's keys share one hash slot)", len(queues), len(nodes), len(cl.Nodes))
	for _, q := range queues {
		step("DeleteQueue", insp.DeleteQueue(q, true))
	}
}
