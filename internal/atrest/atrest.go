// Package atrest encrypts secrets at rest with AES-256-GCM under a key
// derived from LEADPIPE_SECRET_KEY, and derives other purpose keys (session
// signing) from the same root so one key never serves two purposes.
package atrest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// Box seals and opens secrets.
type Box struct {
	root []byte
	aead cipher.AEAD
}

const version byte = 1

// New returns a Box for a 32-byte root key.
func New(root []byte) (*Box, error) {
	if len(root) != 32 {
		return nil, fmt.Errorf("atrest: key must be 32 bytes, got %d", len(root))
	}
	block, err := aes.NewCipher(Derive(root, "leadpipe/secretbox/v1")) // the label of the first name: existing ciphertexts
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{root: append([]byte(nil), root...), aead: aead}, nil
}

// Derive returns HMAC-SHA256(root, label): an independent key per purpose.
func Derive(root []byte, label string) []byte {
	m := hmac.New(sha256.New, root)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Key derives a purpose key from the box's root.
func (b *Box) Key(label string) []byte { return Derive(b.root, label) }

// Seal encrypts plaintext; aad binds the ciphertext to its row (e.g. tenant
// and source id) so a ciphertext copied into another row does not open.
func (b *Box) Seal(plaintext []byte, aad string) []byte {
	nonce := make([]byte, b.aead.NonceSize(), 1+b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	out := append([]byte{version}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte(aad))
}

// ErrOpen means the ciphertext is corrupt, was sealed under another key,
// or belongs to another row.
var ErrOpen = errors.New("atrest: cannot decrypt (wrong LEADPIPE_SECRET_KEY or corrupt data)")

// Open decrypts what Seal produced with the same aad.
func (b *Box) Open(ciphertext []byte, aad string) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(ciphertext) < 1+ns+b.aead.Overhead() || ciphertext[0] != version {
		return nil, ErrOpen
	}
	pt, err := b.aead.Open(nil, ciphertext[1:1+ns], ciphertext[1+ns:], []byte(aad))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}
