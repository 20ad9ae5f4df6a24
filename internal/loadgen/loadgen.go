// Package loadgen is the benchmarks' HTTP load generator. A Conn keeps
// one HTTP/1.1 keep-alive connection and writes requests serialised
// beforehand, reading each response with as little work as it can, as
// wrk does: on a two-core machine the generator's CPU is taken from the
// server and the database under test, so the less it spends, the more a
// benchmark measures the server.
package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// Request is a POST of body to path on host with the headers h, serialised
// for Conn.Do.
func Request(host, path string, h http.Header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// Conn is one client's keep-alive connection. It is not safe for
// concurrent use: each simulated client has its own.
type Conn struct {
	c    net.Conn
	br   *bufio.Reader
	body []byte // the last response body (reused)
}

// Dial connects to addr (host:port).
func Dial(addr string) (*Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, br: bufio.NewReaderSize(c, 4096)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do writes one serialised request and reads its response: the status
// and the body, which stays valid until the next Do.
func (c *Conn) Do(wire []byte) (int, []byte, error) {
	if _, err := c.c.Write(wire); err != nil {
		return 0, nil, err
	}
	return c.readResponse()
}

// readResponse reads one HTTP/1.1 response with a Content-Length (the
// server always sends one).
func (c *Conn) readResponse() (int, []byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(line) <= 2 { // the blank line
			break
		}
		if len(line) > 15 && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(line[15:]))); err != nil {
				return 0, nil, fmt.Errorf("bad header %q", line)
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("response without Content-Length")
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	b := c.body[:length]
	_, err = io.ReadFull(c.br, b)
	return status, b, err
}
