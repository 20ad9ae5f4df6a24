package main

import (
	"net"
	"os"
	"strconv"
	"testing"
)

// The process listening on a port is found (here: this one).
func TestPidListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := pidListening(ln.Addr().String()); got != strconv.Itoa(os.Getpid()) {
		t.Fatalf("pidListening = %q, want %d", got, os.Getpid())
	}
}
