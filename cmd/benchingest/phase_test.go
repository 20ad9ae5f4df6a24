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

// The worst windows are compared with the others: a window whose machine
// was stolen and whose fsyncs were few shows it.
func TestStallCausesComparesTheWorstWindowsWithTheRest(t *testing.T) {
	const w = 250 * time.Millisecond
	var acks []timedLat
	for i := 0; i < 400; i++ { // 16 windows of 250 ms; window 8 is slow
		lat := 2 * time.Millisecond
		if i >= 200 && i < 225 {
			lat = 40 * time.Millisecond
		}
		acks = append(acks, timedLat{at: time.Duration(i) * 10 * time.Millisecond, lat: lat})
	}
	var samples []windowSample
	var m machine
	var c [len(windowCounters)]int64 // fsyncs, pages written back, row lock waits
	var server time.Duration         // the server process: 250 ms of CPU a window, 375 in the slow one
	for i := 0; i <= 16; i++ {
		samples = append(samples, windowSample{m: m, procs: cpu{"server": server}, c: c})
		server += 250 * time.Millisecond
		if i == 8 {
			server += 125 * time.Millisecond // two cores for 250 ms: 400 ms busy, 100 ms stolen; 20 fsyncs, 300 pages, 4 lock waits
			m.busy += 400 * time.Millisecond
			m.steal += 100 * time.Millisecond
			c[0], c[1], c[2] = c[0]+20, c[1]+300, c[2]+4
		} else { // 300 ms busy, 200 ms idle; 100 fsyncs, no page, no wait
			m.busy += 300 * time.Millisecond
			m.idle += 200 * time.Millisecond
			c[0] += 100
		}
	}
	var syncs []timedLat // the fdatasync probe: 2 ms, 30 ms in the slow window
	for i := 0; i < 200; i++ {
		lat := 2 * time.Millisecond
		if i >= 100 && i < 112 {
			lat = 30 * time.Millisecond
		}
		syncs = append(syncs, timedLat{at: time.Duration(i) * 20 * time.Millisecond, lat: lat})
	}
	got := stallCauses(acks, samples, syncs, w, 25*time.Millisecond)
	want := "the worst tenth of the windows: 1.60 cores busy (server 1.50, the rest 0.10), 20.0 % stolen; per window 20 fsyncs, 300 pages written back, 4 row lock waits; " +
		"a 4 KiB write + fdatasync beside MariaDB's files took 30ms (p50), 30ms (max); " +
		"the other windows: 1.20 cores busy (server 1.00, the rest 0.20), 0.0 % stolen; per window 100 fsyncs, 0 pages written back, 0 row lock waits; " +
		"a 4 KiB write + fdatasync beside MariaDB's files took 2ms (p50), 2ms (max)"
	if got != want {
		t.Fatalf("stallCauses:\n got %s\nwant %s", got, want)
	}
	if got := stallCauses(acks[:10], samples, syncs, w, 25*time.Millisecond); got != "" {
		t.Fatalf("no slow acknowledgement: %q", got)
	}
}
