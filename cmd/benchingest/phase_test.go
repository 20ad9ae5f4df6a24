package main

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"
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

func TestCongestionFindsTheWindowsOfTheSlowAcknowledgements(t *testing.T) {
	var acks []timedLat
	for i := 0; i < 400; i++ { // 4 s, one every 10 ms, 16 windows of 250 ms
		lat := 2 * time.Millisecond
		if i >= 200 && i < 225 { // all of window 8 (2 s) is slow
			lat = 40 * time.Millisecond
		}
		if i == 390 {
			lat = 30 * time.Millisecond // one slow ack in window 15
		}
		acks = append(acks, timedLat{at: time.Duration(i) * 10 * time.Millisecond, lat: lat})
	}
	got := congestion(acks, 250*time.Millisecond, 25*time.Millisecond)
	want := "acknowledgements over 25ms: 26 (6.5 %), in 2 of 16 windows of 250ms; the worst tenth of the windows held 96 % of them; the worst began at 2s (25)"
	if got != want {
		t.Fatalf("congestion:\n got %s\nwant %s", got, want)
	}
	if got := congestion(nil, time.Second, time.Millisecond); got != "no acknowledgements" {
		t.Fatalf("empty: %s", got)
	}
}
