package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/wneessen/go-mail"
)

// Message is one rendered e-mail.
type Message struct {
	MessageID string // without angle brackets
	From      string
	To        string
	ToName    string
	Subject   string
	Text      string
	HTML      string
	Date      time.Time
}

// Mailer sends one message. A *SendError tells whether a failure is worth
// retrying.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// SendError is a failed send: Temporary for a 4xx reply or a broken
// connection (retried with backoff), not for a 5xx reply (never retried).
type SendError struct {
	Temporary bool
	Code      int // the SMTP reply code, 0 without one
	Err       error
}

func (e *SendError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("smtp %d: %v", e.Code, e.Err)
	}
	return e.Err.Error()
}

func (e *SendError) Unwrap() error { return e.Err }

// SMTP is a Mailer over SMTP with go-mail (protocol, STARTTLS, AUTH,
// MIME): smtp://[user:pass@]host[:587] uses STARTTLS (required when
// credentials are given, so they only ever travel over TLS; taken when
// offered otherwise), smtps://[user:pass@]host[:465] implicit TLS.
type SMTP struct {
	host     string
	port     int
	implicit bool
	user     string
	pass     string
	// TLS overrides the TLS configuration (tests trust their own CA).
	TLS     *tls.Config
	Timeout time.Duration
}

// ParseSMTPURL reads LEADPIPE_SMTP_URL.
func ParseSMTPURL(raw string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL")
	}
	s := &SMTP{host: u.Hostname(), Timeout: 30 * time.Second}
	switch u.Scheme {
	case "smtp":
		s.port = 587
	case "smtps":
		s.port, s.implicit = 465, true
	default:
		return nil, fmt.Errorf("want smtp://[user:pass@]host:587 (STARTTLS) or smtps://[user:pass@]host:465 (implicit TLS)")
	}
	if s.host == "" {
		return nil, fmt.Errorf("names no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("bad port")
		}
		s.port = n
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	return s, nil
}

// Addr is host:port, for logs (never the credentials).
func (s *SMTP) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

func (s *SMTP) client() (*mail.Client, error) {
	tc := s.TLS
	if tc == nil {
		tc = &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	}
	opts := []mail.Option{mail.WithPort(s.port), mail.WithTimeout(s.Timeout), mail.WithTLSConfig(tc)}
	switch {
	case s.implicit:
		opts = append(opts, mail.WithSSL())
	case s.user != "":
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if s.user != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(s.user), mail.WithPassword(s.pass))
	}
	return mail.NewClient(s.host, opts...)
}

// Build makes the MIME message (multipart/alternative: text, then HTML).
func Build(m Message) (*mail.Msg, error) {
	msg := mail.NewMsg()
	if err := msg.From(m.From); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	var err error
	if m.ToName != "" {
		err = msg.AddToFormat(m.ToName, m.To)
	} else {
		err = msg.To(m.To)
	}
	if err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.MessageID)
	msg.SetDateWithValue(m.Date)
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(mail.TypeTextHTML, m.HTML)
	}
	return msg, nil
}

// Send delivers m in one SMTP session.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	msg, err := Build(m)
	if err != nil {
		return &SendError{Err: err}
	}
	c, err := s.client()
	if err != nil {
		return &SendError{Err: err}
	}
	err = c.DialAndSendWithContext(ctx, msg)
	if err == nil {
		return nil
	}
	var se *mail.SendError
	if errors.As(err, &se) {
		code := se.ErrorCode()
		// A reply code decides; without one (a refused or cut connection,
		// a timeout) the failure is the network's: retried.
		return &SendError{Temporary: code == 0 || code/100 == 4, Code: code, Err: err}
	}
	return &SendError{Temporary: true, Err: err}
}
