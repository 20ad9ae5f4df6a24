package imports

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/leads"
)

// errSuperseded: another run of the import committed a batch first (or it
// is no longer running); this run stops and leaves it to that one.
var errSuperseded = errors.New("imports: the import moved on in another run")

// row is one data row read from the file.
type row struct {
	num    int
	rec    []string
	reason string // refused: why
}

// Run applies an import's rows from its committed offset to the end, a
// batch per transaction. Each batch locks the import row and checks that
// its offset is still where this run read it, so two runs at once (a
// retried task and the sweeper's) never apply a batch twice.
func (s *Service) Run(ctx context.Context, tenantID, id string) error {
	im, err := getImport(ctx, s.DB, tenantID, id)
	if err != nil {
		return err
	}
	if im.State != StateRunning {
		return nil
	}
	var plan Plan
	if err := json.Unmarshal(im.Plan, &plan); err != nil {
		_ = s.Failed(ctx, tenantID, id, "the import's column mapping is unreadable")
		return nil
	}
	cr := newCSVReader(&chunkReader{ctx: ctx, db: s.DB, tenantID: tenantID, importID: id, n: im.Chunks})
	cr.ReuseRecord = false
	if _, err := cr.Read(); err != nil { // the header, checked at upload
		return fmt.Errorf("import %s: header: %w", id, err)
	}
	num := 0
	read := func() (row, bool, error) {
		rec, err := cr.Read()
		if err == io.EOF {
			return row{}, false, nil
		}
		num++
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return row{}, false, err
			}
			return row{num: num, rec: rec, reason: "not valid CSV: " + pe.Err.Error()}, true, nil
		}
		return row{num: num, rec: rec}, true, nil
	}
	for num < im.Offset {
		if _, more, err := read(); err != nil || !more {
			if err == nil {
				err = fmt.Errorf("import %s: the stored file has fewer rows than its offset %d", id, im.Offset)
			}
			return err
		}
	}
	// Two batches at a time, each in its own transaction, so that the
	// database works on both (docs/BENCHMARKS.md, "CSV import, two batches
	// at a time"). Order comes from the import row, locked last: a batch
	// that gets it before the one ahead of it committed rolls back, waits
	// (holding nothing) for that one and runs again. No batch ever waits
	// in Go while it holds a row, so the two cannot wait on each other
	// where the database cannot see it.
	offset := im.Offset
	var prev *batchRun
	// finish waits for the batches in flight and returns what the run
	// returns: the first failure in file order.
	finish := func(err error, runs ...*batchRun) error {
		for _, r := range runs {
			if r == nil {
				continue
			}
			<-r.done
			if err == nil && r.err != nil {
				err = r.err
			}
		}
		if errors.Is(err, errSuperseded) {
			return nil
		}
		return err
	}
	for {
		batch := make([]row, 0, s.batchSize())
		eof := false
		for len(batch) < s.batchSize() {
			r, more, err := read()
			if err != nil {
				return finish(err, prev)
			}
			if !more {
				eof = true
				break
			}
			batch = append(batch, r)
		}
		cur := &batchRun{done: make(chan struct{}), end: offset + len(batch)}
		go func(prev, cur *batchRun, start int, batch []row) {
			defer close(cur.done)
			defer func() { // a panic fails the run, as it would in the task's own goroutine
				if r := recover(); r != nil {
					cur.err = fmt.Errorf("import %s: batch at row %d: panic: %v", id, start, r)
				}
			}()
			cur.err = s.applyBatch(ctx, tenantID, im, &plan, start, batch, eof, prev)
		}(prev, cur, offset, batch)
		if prev != nil {
			<-prev.done
			if errors.Is(prev.err, errSuperseded) {
				// Another run committed that batch; this one's next batch,
				// in flight, may still be the next to commit, and then
				// this run is the one ahead and goes on (the other stops
				// at its own next batch).
				<-cur.done
				if cur.err != nil {
					return finish(cur.err)
				}
				if s.AfterBatch != nil {
					if err := s.AfterBatch(id, cur.end); err != nil {
						return err
					}
				}
				prev, offset = nil, cur.end
				if eof {
					return nil
				}
				continue
			} else if prev.err != nil {
				return finish(prev.err, cur)
			}
			if s.AfterBatch != nil {
				if err := s.AfterBatch(id, prev.end); err != nil {
					return finish(err, cur)
				}
			}
		}
		prev, offset = cur, cur.end
		if eof {
			return finish(nil, cur)
		}
	}
}

// batchRun is one batch of a run in flight.
type batchRun struct {
	done chan struct{} // closed when it ended, err set
	err  error
	end  int // the offset after it
}

// errBehind: the batch before this one in the run has not committed yet;
// this one rolls back, waits for it and runs again.
var errBehind = errors.New("imports: the batch before has not committed yet")

// applyBatch is one transaction: upsert the batch's good rows as the
// import source's records, lock the import at offset, record the refused rows, add the
// counts and move the offset (finishing the import at the end of the
// file). A raced create of a lead re-runs the transaction (db.InTx);
// several imports of one file at once need more re-runs than InTx's own,
// hence the outer retry. prev is the batch before in the same run (nil:
// none in flight): when it has not committed yet, this one waits for it
// and runs again.
func (s *Service) applyBatch(ctx context.Context, tenantID string, im Import, plan *Plan, offset int, batch []row, eof bool,
	prev *batchRun) error {
	waited := false // for prev: behind once it has ended is an error (the run is retried)
	for {
		err := db.Retry(ctx, 20, 20*time.Millisecond, func() error {
			return db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
				now := s.now()
				var recs []leads.BatchRecord
				var recRows []int
				var refused []ErrorRow
				for i, r := range batch {
					if r.reason == "" {
						rec, reason := plan.record(r.rec)
						if reason == "" {
							rec.OrderKey = leads.OrderKey(now, ids.New())
							recs = append(recs, leads.BatchRecord{SourceID: im.SourceID, SenderRecord: rec, SkipUnchanged: true})
							recRows = append(recRows, i)
							continue
						}
						r.reason = reason
					}
					refused = append(refused, ErrorRow{Row: r.num, Reason: clipRunes(r.reason, 500), Raw: rawRow(r.rec)})
				}
				var n counts
				if len(recs) > 0 {
					outcomes, err := s.write()(ctx, tx, tenantID, leads.SenderBatch{Records: recs, Now: now})
					if err != nil {
						return err
					}
					for j, o := range outcomes {
						switch o.Kind {
						case leads.OutcomeCreated:
							n.created++
						case leads.OutcomeUpdated:
							n.updated++
						case leads.OutcomeErased:
							r := batch[recRows[j]]
							refused = append(refused, ErrorRow{Row: r.num, Reason: "this lead was erased (personal data request): it is not re-created", Raw: rawRow(r.rec)})
						default: // unchanged, or older than the lead's data
							n.unchanged++
						}
					}
				}
				// The import row last: a batch holding it never waits for a
				// lead, so a cycle of waits with the run's other batch,
				// writing leads meanwhile, cannot go through it.
				state, at, err := lockImport(ctx, tx, tenantID, im.ID)
				if err != nil {
					return err
				}
				switch {
				case state != StateRunning || at > offset:
					return errSuperseded
				case at < offset:
					return errBehind
				}
				n.refused = len(refused)
				if err := insertErrors(ctx, tx, tenantID, im.ID, refused); err != nil {
					return err
				}
				return advanceImport(ctx, tx, tenantID, im.ID, offset+len(batch), n, eof, now)
			})
		})
		if !errors.Is(err, errBehind) || prev == nil || waited {
			return err
		}
		waited = true
		<-prev.done
		if prev.err != nil && !errors.Is(prev.err, errSuperseded) {
			return prev.err
		}
		// Committed, or another run committed it: the offset now says
		// whether this batch is next or done.
	}
}

type counts struct{ created, updated, unchanged, refused int }

// rawRow is a row as CSV text (without its line end), for the error report.
func rawRow(rec []string) string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(rec)
	w.Flush()
	return strings.TrimRight(b.String(), "\r\n")
}

// record maps a data row to a sender record, or says why it is refused.
func (p *Plan) record(rec []string) (leads.SenderRecord, string) {
	if len(rec) != len(p.Header) {
		return leads.SenderRecord{}, fmt.Sprintf("the row has %d fields, the header row %d", len(rec), len(p.Header))
	}
	var r leads.SenderRecord
	var first, last string
	payload := make(map[string]string, len(rec))
	for i, v := range rec {
		v = strings.TrimSpace(v)
		switch p.Fields[i] {
		case FieldIgnore:
			continue
		case FieldEmail:
			r.Email = v
		case FieldName:
			r.Name = v
		case FieldFirstName:
			first = v
		case FieldLastName:
			last = v
		case FieldPhone:
			r.Phone = v
		case FieldCompany:
			r.Company = v
		case FieldTags:
			for _, t := range strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ';' }) {
				if t = strings.TrimSpace(t); t != "" {
					r.Tags = append(r.Tags, t)
				}
			}
		}
		payload[p.Header[i]] = v
	}
	if r.Name == "" {
		r.Name = strings.TrimSpace(first + " " + last)
	}
	key := strings.TrimSpace(rec[p.NaturalKey])
	if p.Fields[p.NaturalKey] == FieldEmail {
		key = strings.ToLower(key)
	}
	switch {
	case key == "":
		return r, fmt.Sprintf("no value in the natural key column %q", p.Header[p.NaturalKey])
	case len(key) > 191:
		return r, fmt.Sprintf("the natural key (column %q) is longer than 191 bytes", p.Header[p.NaturalKey])
	case r.Email != "" && !validEmail(r.Email):
		return r, fmt.Sprintf("email %q is not an email address", clipRunes(r.Email, 80))
	case r.Phone != "" && !validPhone(r.Phone):
		return r, fmt.Sprintf("phone %q is not a phone number", clipRunes(r.Phone, 80))
	case utf8.RuneCountInString(r.Name) > 255:
		return r, "name is longer than 255 characters"
	case utf8.RuneCountInString(r.Company) > 255:
		return r, "company is longer than 255 characters"
	}
	for _, t := range r.Tags {
		if len(t) > 64 {
			return r, fmt.Sprintf("tag %q is longer than 64 characters", clipRunes(t, 80))
		}
	}
	b, err := json.Marshal(payload) // keys sorted: the same row gives the same payload
	if err != nil {
		return r, "the row cannot be stored: " + err.Error()
	}
	r.SourceRef, r.Payload = key, b
	return r, ""
}

// validEmail is a plain sanity check: one @, something on both sides, a
// dot in the domain, no spaces, at most 320 bytes.
func validEmail(e string) bool {
	at := strings.IndexByte(e, '@')
	if len(e) > 320 || at <= 0 || at != strings.LastIndexByte(e, '@') || strings.ContainsAny(e, " \t<>,;\"") {
		return false
	}
	dom := e[at+1:]
	return strings.Contains(dom, ".") && !strings.HasPrefix(dom, ".") && !strings.HasSuffix(dom, ".")
}

// validPhone: digits with the usual separators, 5 to 20 digits, at most 64 bytes.
func validPhone(p string) bool {
	if len(p) > 64 {
		return false
	}
	digits := 0
	for _, c := range p {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case strings.ContainsRune(" +-().\u00a0/", c):
		default:
			return false
		}
	}
	return digits >= 5 && digits <= 20
}

// chunkReader reads an import's stored file piece by piece.
type chunkReader struct {
	ctx                context.Context
	db                 db.Ext
	tenantID, importID string
	n, seq             int
	buf                []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.seq >= c.n {
			return 0, io.EOF
		}
		data, err := getChunk(c.ctx, c.db, c.tenantID, c.importID, c.seq)
		if err != nil {
			return 0, err
		}
		c.buf, c.seq = data, c.seq+1
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}
