package main

import "testing"

// Exactly dup in every hundred requests repeat a delivery already sent
// (one of the last 50 new ones); the others are new, numbered in order.
func TestMixNumber(t *testing.T) {
	for _, dup := range []int{0, 10, 50, 90, 99} {
		next, dups := 0, 0
		const n = 100_000
		for i := 0; i < n; i++ {
			got := mixNumber(i, dup)
			switch {
			case got == next:
				next++
			case got < next && got >= next-50:
				dups++
			default:
				t.Fatalf("dup %d: request %d carries delivery %d, with %d sent so far", dup, i, got, next)
			}
		}
		if dups != n*dup/100 {
			t.Fatalf("dup %d: %d duplicates in %d requests", dup, dups, n)
		}
	}
}
