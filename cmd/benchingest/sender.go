package main

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

// sender is one simulated webhook sender with its own connection.
type sender struct {
	conn   net.Conn
	br     *bufio.Reader
	client *http.Client // with -nethttp
	url    string
	body   []byte // the last response body (reused)
}

func dialSender(addr string, useNetHTTP bool, url string) (*sender, error) {
	if useNetHTTP {
		return &sender{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}, url: url}, nil
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &sender{conn: c, br: bufio.NewReaderSize(c, 4096)}, nil
}

func serialise(host, path string, h http.Header, body []byte) []byte {
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

func (s *sender) send(wire []byte, h http.Header, body []byte) (int, []byte, error) {
	if s.client != nil {
		r, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
		r.Header = h.Clone()
		res, err := s.client.Do(r)
		if err != nil {
			return 0, nil, err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, b, nil
	}
	if _, err := s.conn.Write(wire); err != nil {
		return 0, nil, err
	}
	return s.readResponse()
}

// readResponse reads one HTTP/1.1 response with a Content-Length (the
// server always sends one) with as little work as it can, as wrk does:
// the load generator's CPU is taken from the server under test.
func (s *sender) readResponse() (int, []byte, error) {
	line, err := s.br.ReadSlice('\n')
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
		line, err := s.br.ReadSlice('\n')
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
	if cap(s.body) < length {
		s.body = make([]byte, length)
	}
	b := s.body[:length]
	_, err = io.ReadFull(s.br, b)
	return status, b, err
}
