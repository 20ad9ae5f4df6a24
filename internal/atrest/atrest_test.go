package atrest

import (
	"bytes"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ct := b.Seal([]byte("whsec_abc"), "t1/s1")
	if bytes.Contains(ct, []byte("whsec_abc")) {
		t.Fatal("plaintext visible in ciphertext")
	}
	pt, err := b.Open(ct, "t1/s1")
	if err != nil || string(pt) != "whsec_abc" {
		t.Fatalf("open: %q %v", pt, err)
	}
	if _, err := b.Open(ct, "t2/s1"); err == nil {
		t.Fatal("opened with another row's aad")
	}
	other, _ := New(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(ct, "t1/s1"); err == nil {
		t.Fatal("opened with another key")
	}
	ct[len(ct)-1] ^= 1
	if _, err := b.Open(ct, "t1/s1"); err == nil {
		t.Fatal("opened tampered ciphertext")
	}
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}
