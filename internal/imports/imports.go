// Package imports runs CSV imports of leads (docs/ARCHITECTURE.md): an upload is
// checked and stored whole in the database first (imports, import_chunks),
// then a task applies its rows in batches through the same batch upsert as
// webhooks (leads.Service.WriteSenders) as records of the tenant's import
// source, keyed by the natural-key column. Each batch commits the import's
// row offset and counts with the leads it wrote, so a crashed run resumes
// after its last batch and applies nothing twice; a row that changes
// nothing writes nothing, so a re-import reports every row unchanged.
package imports

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/clip"
	"leadpipe/internal/clock"
	"leadpipe/internal/db"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/jobs"
	"leadpipe/internal/leads"
	"leadpipe/internal/sources"
)

// Import states.
const (
	StateRunning   = "running"
	StateSucceeded = "succeeded"
	StateFailed    = "failed"
	// StateDraft is an upload from the web UI waiting for its column
	// mapping to be confirmed (Start); its rows are not applied yet.
	StateDraft = "draft"
)

// Import is one row of imports.
type Import struct {
	TenantID   string     `db:"tenant_id"`
	ID         string     `db:"id"`
	SourceID   string     `db:"source_id"`
	State      string     `db:"state"`
	Filename   string     `db:"filename"`
	NaturalKey string     `db:"natural_key"`
	Plan       []byte     `db:"mapping"`
	Size       int64      `db:"size_bytes"`
	Chunks     int        `db:"chunks"`
	SHA256     string     `db:"body_sha256"`
	Rows       int        `db:"total_rows"`
	Offset     int        `db:"offset_rows"`
	New        int        `db:"new_rows"`
	Updated    int        `db:"updated_rows"`
	Unchanged  int        `db:"unchanged_rows"`
	Errors     int        `db:"error_rows"`
	LastError  *string    `db:"last_error"`
	CreatedBy  string     `db:"created_by"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
	FinishedAt *time.Time `db:"finished_at"`
}

// View is an import as the API shows it.
type View struct {
	ID         string            `json:"id"`
	State      string            `json:"state"`
	Filename   string            `json:"filename"`
	NaturalKey string            `json:"natural_key"`
	Mapping    map[string]string `json:"mapping"`
	Rows       int               `json:"rows"`
	Processed  int               `json:"processed"`
	Progress   float64           `json:"progress"` // processed / rows, 0…1
	New        int               `json:"new"`
	Updated    int               `json:"updated"`
	Unchanged  int               `json:"unchanged"`
	Errors     int               `json:"errors"`
	Refused    int               `json:"refused"` // = errors: rows refused, listed with a reason at …/errors
	SourceID   string            `json:"source_id"`
	LastError  *string           `json:"last_error"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	FinishedAt *time.Time        `json:"finished_at"`
}

// View returns the API shape of an import.
func (im Import) View() View {
	v := View{ID: im.ID, State: im.State, Filename: im.Filename, NaturalKey: im.NaturalKey, Rows: im.Rows, Processed: im.Offset,
		New: im.New, Updated: im.Updated, Unchanged: im.Unchanged, Errors: im.Errors, Refused: im.Errors, SourceID: im.SourceID,
		LastError: im.LastError, CreatedAt: im.CreatedAt, UpdatedAt: im.UpdatedAt, FinishedAt: im.FinishedAt}
	var p Plan
	if json.Unmarshal(im.Plan, &p) == nil {
		v.Mapping = p.Mapping
	}
	switch {
	case im.State == StateSucceeded || im.Rows == 0:
		v.Progress = 1
	default:
		v.Progress = float64(im.Offset) / float64(im.Rows)
	}
	return v
}

// Enqueuer queues tasks (an *asynq.Client).
type Enqueuer interface {
	EnqueueContext(ctx context.Context, t *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// WriteFunc writes a batch's records to their leads in the batch's
// transaction (upsert, assignment, timeline, outbound events):
// leads.Service.WriteSenders.
type WriteFunc func(ctx context.Context, x db.Ext, tenantID string, b leads.SenderBatch) ([]leads.UpsertOutcome, error)

// Service creates, runs and reports imports.
type Service struct {
	DB         *sqlx.DB
	Sources    *sources.Service
	Write      WriteFunc // nil: a leads.Service that tells nobody
	Queue      Enqueuer
	EachTenant func(ctx context.Context, fn func(tenantID string) error) error
	Log        *slog.Logger
	Now        func() time.Time

	// BatchSize is the rows per transaction (default 500; see
	// docs/BENCHMARKS.md, "CSV import").
	BatchSize int
	// SpoolDir holds uploads while they are checked ("" = os.TempDir()).
	SpoolDir string
	// AfterBatch, when set, runs after each committed batch with the
	// import's new offset; an error stops the run there (tests: a crash
	// between two batches).
	AfterBatch func(importID string, offset int) error
}

// NewService returns a service.
func NewService(d *sqlx.DB, src *sources.Service, write WriteFunc, q Enqueuer,
	eachTenant func(ctx context.Context, fn func(tenantID string) error) error, log *slog.Logger, now func() time.Time) *Service {
	return &Service{DB: d, Sources: src, Write: write, Queue: q, EachTenant: eachTenant, Log: log, Now: now}
}

func (s *Service) write() WriteFunc {
	if s.Write == nil {
		return (&leads.Service{}).WriteSenders
	}
	return s.Write
}

func (s *Service) now() time.Time { return clock.Read(s.Now).UTC() }

func (s *Service) batchSize() int {
	if s.BatchSize > 0 {
		return s.BatchSize
	}
	return 500
}

// CreateInput is an accepted upload.
type CreateInput struct {
	File       *Spooled
	Filename   string
	NaturalKey string            // column name; "" = the email column
	Mapping    map[string]string // header name → field
	// Draft stores the file without running it: the UI shows a preview and
	// the mapping, and Start runs it.
	Draft bool
}

// Create stores an upload as an import (its file, its plan, an audit
// entry) in one transaction, completing once's key in it, then queues the
// run. Invalid (422): a mapping or natural key the header does not allow.
func (s *Service) Create(ctx context.Context, tenantID string, in CreateInput, once idempotency.Once[View]) (View, error) {
	plan, err := NewPlan(in.File.Header, in.Mapping, in.NaturalKey)
	if err != nil && in.Draft {
		plan, err = draftPlan(in.File.Header), nil // the mapping is chosen before Start
	}
	if err != nil {
		return View{}, err
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return View{}, err
	}
	src, err := s.Sources.ImportSource(ctx, tenantID)
	if err != nil {
		return View{}, err
	}
	now := s.now()
	actor := audit.From(ctx).Actor
	im := Import{TenantID: tenantID, ID: ids.New(), SourceID: src.ID, State: StateRunning, Filename: clipRunes(in.Filename, 255),
		NaturalKey: plan.Header[plan.NaturalKey], Plan: planJSON, Size: in.File.Size, Chunks: in.File.numChunks(),
		SHA256: hex.EncodeToString(in.File.SHA256[:]), Rows: in.File.Rows, CreatedBy: clipRunes(actor.Name, 255),
		CreatedAt: now, UpdatedAt: now}
	switch {
	case in.Draft:
		im.State = StateDraft
	case im.Rows == 0:
		im.State, im.FinishedAt = StateSucceeded, &now
	}
	v, err := idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (View, error) {
		if err := audit.Record(ctx, tx, tenantID, audit.Entry{Action: "leads.imported", TargetType: "import", TargetID: im.ID,
			Detail: map[string]any{"filename": im.Filename, "rows": im.Rows, "bytes": im.Size, "natural_key": im.NaturalKey,
				"sha256": im.SHA256}}); err != nil {
			return View{}, err
		}
		if err := insertImport(ctx, tx, im); err != nil {
			return View{}, err
		}
		if err := in.File.chunks(func(seq int, data []byte) error {
			return insertChunk(ctx, tx, tenantID, im.ID, seq, data)
		}); err != nil {
			return View{}, err
		}
		return im.View(), nil
	})
	if err != nil {
		return View{}, err
	}
	if im.State == StateRunning {
		s.enqueue(ctx, tenantID, im.ID)
	}
	return v, nil
}

// Start runs a draft import with the mapping and natural key chosen on
// the preview (Invalid when the header does not allow them). Starting an
// import already started changes nothing (a double click).
func (s *Service) Start(ctx context.Context, tenantID, id string, mapping map[string]string, naturalKey string) (View, error) {
	var started bool
	var im Import
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		var err error
		started = false
		if im, err = lockDraft(ctx, tx, tenantID, id); err != nil || im.State != StateDraft {
			return err
		}
		var old Plan
		if err := json.Unmarshal(im.Plan, &old); err != nil {
			return err
		}
		plan, err := NewPlan(old.Header, mapping, naturalKey)
		if err != nil {
			return err
		}
		if im.Plan, err = json.Marshal(plan); err != nil {
			return err
		}
		im.NaturalKey, im.State, im.UpdatedAt = plan.Header[plan.NaturalKey], StateRunning, s.now()
		if im.Rows == 0 {
			im.State, im.FinishedAt = StateSucceeded, &im.UpdatedAt
		}
		started = true
		return startDraft(ctx, tx, im)
	})
	if err != nil {
		return View{}, err
	}
	if started && im.State == StateRunning {
		s.enqueue(ctx, tenantID, id)
	}
	return im.View(), nil
}

// Preview is a draft's header, its first rows and the plan proposed for it.
type Preview struct {
	Plan Plan
	Rows [][]string
}

// Preview reads the first rows of an import's stored file (at most
// PreviewRows, from its first piece).
func (s *Service) Preview(ctx context.Context, tenantID, id string) (Preview, error) {
	im, err := getImport(ctx, s.DB, tenantID, id)
	if err != nil {
		return Preview{}, err
	}
	var p Preview
	if err := json.Unmarshal(im.Plan, &p.Plan); err != nil {
		return Preview{}, err
	}
	if im.Chunks == 0 {
		return p, nil
	}
	cr := newCSVReader(&chunkReader{ctx: ctx, db: s.DB, tenantID: tenantID, importID: id, n: 1})
	if _, err := cr.Read(); err != nil {
		return p, nil
	}
	for len(p.Rows) < PreviewRows {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil && rec == nil {
			break // a row cut by the end of the first piece, or not valid CSV
		}
		p.Rows = append(p.Rows, rec)
	}
	return p, nil
}

// Get returns one import of the tenant (NotFound for another tenant's).
func (s *Service) Get(ctx context.Context, tenantID, id string) (View, error) {
	im, err := getImport(ctx, s.DB, tenantID, id)
	if err != nil {
		return View{}, err
	}
	return im.View(), nil
}

// List returns the tenant's latest imports, newest first.
func (s *Service) List(ctx context.Context, tenantID string, limit int) ([]View, error) {
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	ims, err := listImports(ctx, s.DB, tenantID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]View, len(ims))
	for i, im := range ims {
		out[i] = im.View()
	}
	return out, nil
}

// ErrorRow is a refused row: its number among the data rows (1 = the row
// after the header), why, and the row as it was (CSV).
type ErrorRow struct {
	Row    int    `db:"row_num"`
	Reason string `db:"reason"`
	Raw    string `db:"raw"`
}

// Errors calls each with the import's refused rows in row order, a page at
// a time (NotFound for another tenant's import).
func (s *Service) Errors(ctx context.Context, tenantID, id string, each func([]ErrorRow) error) error {
	if _, err := getImport(ctx, s.DB, tenantID, id); err != nil {
		return err
	}
	after := 0
	for {
		page, err := errorPage(ctx, s.DB, tenantID, id, after, 1000)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if err := each(page); err != nil {
				return err
			}
		}
		if len(page) < 1000 {
			return nil
		}
		after = page[len(page)-1].Row
	}
}

// clipRunes cuts s to a VARCHAR(n) column.
func clipRunes(s string, n int) string { return clip.Runes(s, n, "") }

// ---- Tasks ----

// Task types.
const (
	TypeRun   = "import:run"
	TypeSweep = "import:sweep"
)

type runPayload struct {
	TenantID string `json:"tenant_id"`
	ImportID string `json:"import_id"`
}

// enqueue queues an import's run; a failure is logged: the sweeper
// (TypeSweep) queues every import left running.
func (s *Service) enqueue(ctx context.Context, tenantID, id string) {
	b, _ := json.Marshal(runPayload{TenantID: tenantID, ImportID: id})
	_, err := s.Queue.EnqueueContext(ctx, asynq.NewTask(TypeRun, b), asynq.TaskID("import:"+id),
		asynq.Queue(jobs.QueueDefault), asynq.MaxRetry(25), asynq.Timeout(time.Hour))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) && s.Log != nil {
		s.Log.WarnContext(ctx, "enqueue import failed; the sweeper retries", "tenant_id", tenantID, "import_id", id, "err", err)
	}
}

// HandleRun is the TypeRun task: run (or resume) one import.
func (s *Service) HandleRun(ctx context.Context, t *asynq.Task) error {
	var p runPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("import task: %v: %w", err, asynq.SkipRetry)
	}
	err := s.Run(ctx, p.TenantID, p.ImportID)
	if apperr.Is(err, apperr.NotFound) {
		return nil
	}
	return err
}

// DraftTTL is how long an upload from the web UI waits for its mapping
// to be confirmed (Start): the sweep fails a draft left longer and deletes
// its file, which holds personal data nobody chose to import. The import's
// row stays, failed with the reason, so the upload is not lost without a
// record.
const DraftTTL = 24 * time.Hour

// draftExpired is the reason an expired draft fails with.
const draftExpired = "not started within 24 hours of the upload; the file was deleted (upload it again to import it)"

// HandleSweep is the TypeSweep task: queue every import still running
// that has not moved for a minute (its task was lost, or Redis was down
// when it was created; a run already queued keeps its TaskID), and fail
// every draft older than DraftTTL.
func (s *Service) HandleSweep(ctx context.Context, _ *asynq.Task) error {
	now := s.now()
	return s.EachTenant(ctx, func(tenantID string) error {
		idList, err := stalledImports(ctx, s.DB, tenantID, now.Add(-time.Minute))
		if err != nil {
			return err
		}
		for _, id := range idList {
			s.enqueue(ctx, tenantID, id)
		}
		drafts, err := expiredDrafts(ctx, s.DB, tenantID, now.Add(-DraftTTL))
		if err != nil {
			return err
		}
		for _, id := range drafts {
			if err := failImport(ctx, s.DB, tenantID, id, StateDraft, draftExpired, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// Failed marks an import failed for good (its task ran out of retries).
func (s *Service) Failed(ctx context.Context, tenantID, id, reason string) error {
	return failImport(ctx, s.DB, tenantID, id, StateRunning, clipRunes(reason, 1000), s.now())
}

// HandleFailure is the TypeRun failure hook: on the last attempt the
// import is marked failed with the error.
func (s *Service) HandleFailure(ctx context.Context, t *asynq.Task, err error) {
	if !jobs.FinalFailure(ctx, err) {
		return
	}
	var p runPayload
	if json.Unmarshal(t.Payload(), &p) != nil {
		return
	}
	if ferr := s.Failed(ctx, p.TenantID, p.ImportID, "the import stopped: "+err.Error()); ferr != nil && s.Log != nil {
		s.Log.ErrorContext(ctx, "mark import failed", "import_id", p.ImportID, "err", ferr)
	}
}
