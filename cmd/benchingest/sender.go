package main

import (
	"bytes"
	"io"
	"net/http"

	"leadpipe/internal/loadgen"
)

// sender is one simulated webhook sender with its own connection.
type sender struct {
	conn   *loadgen.Conn
	client *http.Client // with -nethttp
	url    string
}

func dialSender(addr string, useNetHTTP bool, url string) (*sender, error) {
	if useNetHTTP {
		return &sender{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}, url: url}, nil
	}
	c, err := loadgen.Dial(addr)
	if err != nil {
		return nil, err
	}
	return &sender{conn: c}, nil
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
	return s.conn.Do(wire)
}
