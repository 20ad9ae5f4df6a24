// Package smtptest runs a real SMTP server (emersion/go-smtp) in the test
// process: STARTTLS or implicit TLS with a fresh self-signed certificate,
// AUTH PLAIN, and a script that answers each message (accept, a 4xx or
// 5xx reply, or a connection cut after DATA).
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Cut, returned by a Script, closes the connection after reading DATA
// instead of answering it.
var Cut = errors.New("smtptest: cut the connection")

// Script answers the n-th message (0-based, counting every DATA) whose
// Message-ID is id: nil accepts it (250), an *smtp.SMTPError refuses it,
// Cut drops the connection.
type Script func(n int, id string) error

// Message is one accepted message.
type Message struct {
	From      string
	To        []string
	MessageID string
	Subject   string
	Raw       []byte
	TLS       bool
	User      string // authenticated as, "" without AUTH
}

// Options configure a server.
type Options struct {
	TLS      bool   // offer STARTTLS (or, with Implicit, TLS from the start)
	Implicit bool   // implicit TLS (smtps)
	User     string // AUTH PLAIN required when set
	Pass     string
	Script   Script
	// Hold, when set, runs at each MAIL command before it is answered (a
	// test holds the sender there, before any message data).
	Hold func()
}

// Server is a running SMTP server.
type Server struct {
	Addr     string
	RootCAs  *x509.CertPool // trusts the server's certificate
	srv      *smtp.Server
	opts     Options
	mu       sync.Mutex
	accepted []Message
	seen     int
	// Tried counts DATA commands per Message-ID (accepted or not).
	tried map[string]int
}

// Start runs a server until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{opts: o, tried: map[string]int{}}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, c: c}, nil
	}))
	s.srv.Domain = "smtptest.local"
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.srv.ErrorLog = discard{}
	var l net.Listener
	var err error
	if o.TLS {
		cert, pool := selfSigned(t)
		s.RootCAs = pool
		s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		if o.Implicit {
			l, err = tls.Listen("tcp", "127.0.0.1:0", s.srv.TLSConfig)
		} else {
			l, err = net.Listen("tcp", "127.0.0.1:0")
		}
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// TLSConfig is a client configuration that trusts the server.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.RootCAs, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// Messages returns the accepted messages.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.accepted...)
}

// Tried returns how many times a Message-ID reached DATA.
func (s *Server) Tried(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tried[id]
}

type discard struct{}

func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}

type session struct {
	s    *Server
	c    *smtp.Conn
	from string
	to   []string
	user string
}

func (x *session) AuthMechanisms() []string {
	if x.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (x *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if user != x.s.opts.User || pass != x.s.opts.Pass {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		x.user = user
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if x.s.opts.Hold != nil {
		x.s.opts.Hold()
	}
	if x.s.opts.User != "" && x.user == "" {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := Message{From: x.from, To: x.to, Raw: raw, User: x.user}
	if _, ok := x.c.TLSConnectionState(); ok {
		m.TLS = true
	}
	if pm, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
		m.MessageID = strings.Trim(pm.Header.Get("Message-Id"), "<>")
		if dec, err := new(mimeDecoder).decode(pm.Header.Get("Subject")); err == nil {
			m.Subject = dec
		}
	}
	x.s.mu.Lock()
	n := x.s.seen
	x.s.seen++
	x.s.tried[m.MessageID]++
	x.s.mu.Unlock()
	if x.s.opts.Script != nil {
		switch err := x.s.opts.Script(n, m.MessageID); {
		case errors.Is(err, Cut):
			_ = x.c.Conn().Close()
			return err
		case err != nil:
			return err
		}
	}
	x.s.mu.Lock()
	x.s.accepted = append(x.s.accepted, m)
	x.s.mu.Unlock()
	return nil
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtptest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: c}, pool
}

type mimeDecoder struct{}

type mimeWordDecoder = mime.WordDecoder

func (mimeDecoder) decode(s string) (string, error) {
	return new(mimeWordDecoder).DecodeHeader(s)
}
