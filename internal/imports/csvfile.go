package imports

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"leadpipe/internal/apperr"
)

// MaxBytes is the largest CSV file an import takes (50 MiB, docs/API.md, "Leads, idempotency and concurrency").
const MaxBytes = 50 << 20

// chunkSize is the size of the stored pieces of a file (import_chunks):
// below the default max_allowed_packet of MariaDB (16 MiB) and MySQL.
const chunkSize = 1 << 20

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Spooled is an uploaded CSV file read to its end and checked: at most
// MaxBytes, UTF-8 (a byte order mark allowed), a header row. It waits in a
// temporary file until Create stores it in the database; Close removes it.
type Spooled struct {
	f      *os.File
	Size   int64
	SHA256 [32]byte
	Header []string
	Rows   int // data rows (records after the header, malformed ones included)
	// Preview is the first rows (at most PreviewRows), for the upload page.
	Preview [][]string
}

// PreviewRows is how many data rows a Spooled keeps for the preview.
const PreviewRows = 10

// Close removes the temporary file.
func (s *Spooled) Close() {
	if s != nil && s.f != nil {
		name := s.f.Name()
		_ = s.f.Close()
		_ = os.Remove(name)
	}
}

// encodingError is a file that is not UTF-8.
type encodingError struct{ msg string }

func (e *encodingError) Error() string { return e.msg }

// tooLargeError is a file over the limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the file is larger than %d bytes", e.limit)
}

// checkReader passes the bytes of r through and fails with an
// encodingError at the first byte that is not UTF-8 (or a NUL, or a UTF-16
// byte order mark), with a tooLargeError past limit bytes. A rune split
// between two reads is checked when its end arrives.
type checkReader struct {
	r     io.Reader
	limit int64
	n     int64
	carry []byte
	buf   []byte
	err   error
}

func (c *checkReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if c.n == 0 && n >= 2 && (bytes.HasPrefix(p[:n], []byte{0xFE, 0xFF}) || bytes.HasPrefix(p[:n], []byte{0xFF, 0xFE})) {
			c.err = &encodingError{"the file is UTF-16 (it starts with a UTF-16 byte order mark): save it as CSV UTF-8 and upload it again"}
			return 0, c.err
		}
		c.n += int64(n)
		if c.n > c.limit {
			c.err = &tooLargeError{c.limit}
			return 0, c.err
		}
		if bytes.IndexByte(p[:n], 0) >= 0 {
			c.err = &encodingError{"the file contains NUL bytes, so it is not UTF-8 text (UTF-16 without a byte order mark?): save it as CSV UTF-8 and upload it again"}
			return 0, c.err
		}
		c.buf = append(append(c.buf[:0], c.carry...), p[:n]...)
		cut := len(c.buf)
		// An incomplete rune at the end waits for the next read.
		for k := 1; k <= 3 && k <= len(c.buf); k++ {
			b := c.buf[len(c.buf)-k]
			if b < 0x80 {
				break
			}
			if b >= 0xC0 {
				if !utf8.FullRune(c.buf[len(c.buf)-k:]) {
					cut = len(c.buf) - k
				}
				break
			}
		}
		if !utf8.Valid(c.buf[:cut]) {
			at := c.n - int64(n) - int64(len(c.carry))
			for i := 0; i < cut; {
				r, size := utf8.DecodeRune(c.buf[i:cut])
				if r == utf8.RuneError && size == 1 {
					at += int64(i)
					break
				}
				i += size
			}
			c.err = &encodingError{fmt.Sprintf("the file is not UTF-8 (an invalid byte at offset %d; Latin-1 or Windows-1252?): save it as CSV UTF-8 and upload it again", at)}
			return 0, c.err
		}
		c.carry = append(c.carry[:0], c.buf[cut:]...)
	}
	if err == io.EOF && len(c.carry) > 0 {
		c.err = &encodingError{"the file is not UTF-8 (it ends in the middle of a character): save it as CSV UTF-8 and upload it again"}
		return n, c.err
	}
	return n, err
}

// skipBOM drops a UTF-8 byte order mark at the start of r.
type skipBOM struct {
	r    io.Reader
	done bool
	head []byte
}

func (s *skipBOM) Read(p []byte) (int, error) {
	if !s.done {
		s.done = true
		head := make([]byte, 3)
		n, err := io.ReadFull(s.r, head)
		head = head[:n]
		if bytes.Equal(head, utf8BOM) {
			head = nil
		}
		s.head = head
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return 0, err
		}
	}
	if len(s.head) > 0 {
		n := copy(p, s.head)
		s.head = s.head[n:]
		return n, nil
	}
	return s.r.Read(p)
}

// newCSVReader reads RFC 4180 records from r (a UTF-8 byte order mark
// skipped); rows may have any number of fields (a ragged row is refused
// by the import, not by the parser).
func newCSVReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(&skipBOM{r: r})
	cr.FieldsPerRecord = -1
	return cr
}

// Spool reads an upload to its end into a temporary file in dir, hashing
// and checking it on the way (encoding, size, CSV header), and counts its
// rows. Nothing is stored in the database: a refused file leaves nothing.
// Errors: TooLarge (413), UnsupportedMediaType (415: not UTF-8), Invalid
// (422: no header row, a blank or repeated column name).
func Spool(body io.Reader, limit int64, dir string) (*Spooled, error) {
	if limit <= 0 {
		limit = MaxBytes
	}
	f, err := os.CreateTemp(dir, "leadpipe-import-*.csv")
	if err != nil {
		return nil, err
	}
	sp := &Spooled{f: f}
	ok := false
	defer func() {
		if !ok {
			sp.Close()
		}
	}()
	h := sha256.New()
	chk := &checkReader{r: body, limit: limit}
	tee := io.TeeReader(chk, io.MultiWriter(f, h, countWriter{&sp.Size}))
	cr := newCSVReader(tee)
	header, err := cr.Read()
	if err != nil {
		if e := spoolErr(err); e != nil {
			return nil, e
		}
		if err == io.EOF {
			return nil, apperr.InvalidFields(map[string]string{"body": "the file is empty: a CSV file with a header row is expected"})
		}
		return nil, apperr.InvalidFields(map[string]string{"body": "the header row is not valid CSV: " + err.Error()})
	}
	if f := checkHeader(header); f != nil {
		return nil, apperr.InvalidFields(f)
	}
	sp.Header = append([]string(nil), header...)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if e := spoolErr(err); e != nil {
				return nil, e
			}
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return nil, err
			}
		}
		if len(sp.Preview) < PreviewRows {
			sp.Preview = append(sp.Preview, append([]string(nil), rec...))
		}
		sp.Rows++
	}
	// The CSV reader stops at EOF: whatever is left (nothing) passes the checks too.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		if e := spoolErr(err); e != nil {
			return nil, e
		}
		return nil, err
	}
	copy(sp.SHA256[:], h.(hash.Hash).Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ok = true
	return sp, nil
}

type countWriter struct{ n *int64 }

func (c countWriter) Write(p []byte) (int, error) { *c.n += int64(len(p)); return len(p), nil }

// spoolErr maps the checks' errors to
// domain errors; nil for any other error.
func spoolErr(err error) error {
	var ee *encodingError
	var tl *tooLargeError
	switch {
	case errors.As(err, &ee):
		return apperr.New(apperr.UnsupportedMediaType, "%s", ee.msg)
	case errors.As(err, &tl):
		return apperr.New(apperr.TooLarge, "the file is larger than %d MiB: split it into smaller files", tl.limit>>20)
	}
	return nil
}

// checkHeader names what is wrong with a header row (nil: nothing).
func checkHeader(header []string) map[string]string {
	seen := map[string]bool{}
	for i, h := range header {
		k := normalizeColumn(h)
		if k == "" {
			return map[string]string{"body": fmt.Sprintf("column %d of the header row has no name", i+1)}
		}
		if seen[k] {
			return map[string]string{"body": fmt.Sprintf("the header row names column %q twice", strings.TrimSpace(h))}
		}
		seen[k] = true
	}
	return nil
}

func normalizeColumn(h string) string { return strings.ToLower(strings.TrimSpace(h)) }

// chunks cuts the spooled file into the stored pieces, calling each in order.
func (s *Spooled) chunks(each func(seq int, data []byte) error) error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	buf := make([]byte, chunkSize)
	for seq := 0; ; seq++ {
		n, err := io.ReadFull(s.f, buf)
		if n > 0 {
			if err := each(seq, buf[:n]); err != nil {
				return err
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// numChunks is how many pieces the file is stored in.
func (s *Spooled) numChunks() int { return int((s.Size + chunkSize - 1) / chunkSize) }
