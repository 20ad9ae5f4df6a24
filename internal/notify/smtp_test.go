package notify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"leadpipe/internal/notify"
	"leadpipe/internal/notify/smtptest"
)

func message(id string) notify.Message {
	return notify.Message{MessageID: id, From: "Leadpipe <leads@acme.test>", To: "ada@acme.test", ToName: "Ada Lovelace",
		Subject: "New lead for you: Grace — Überraschung", Text: "plain part", HTML: "<p>html part</p>", Date: time.Now()}
}

func mailer(t *testing.T, url string, s *smtptest.Server) *notify.SMTP {
	t.Helper()
	m, err := notify.ParseSMTPURL(url)
	if err != nil {
		t.Fatal(err)
	}
	if s.RootCAs != nil {
		m.TLS = s.TLSConfig()
	}
	m.Timeout = 5 * time.Second
	return m
}

// The sender against a real SMTP server (go-smtp in this process): STARTTLS
// and AUTH, implicit TLS, a plain local relay, and the replies that decide
// a retry (4xx, a cut connection) from a permanent failure (5xx).
func TestSMTPSender(t *testing.T) {
	ctx := context.Background()
	t.Run("starttls and auth", func(t *testing.T) {
		s := smtptest.Start(t, smtptest.Options{TLS: true, User: "leadpipe", Pass: "s3cret"})
		m := mailer(t, "smtp://leadpipe:s3cret@"+s.Addr, s)
		if err := m.Send(ctx, message("assigned.L1.new@acme.test")); err != nil {
			t.Fatal(err)
		}
		got := s.Messages()
		if len(got) != 1 || !got[0].TLS || got[0].User != "leadpipe" || got[0].MessageID != "assigned.L1.new@acme.test" {
			t.Fatalf("got %+v", got)
		}
		raw := string(got[0].Raw)
		for _, want := range []string{"multipart/alternative", "text/plain", "text/html", "plain part", "html part"} {
			if !strings.Contains(raw, want) {
				t.Fatalf("message lacks %q:\n%s", want, raw)
			}
		}
		if got[0].Subject != "New lead for you: Grace — Überraschung" {
			t.Fatalf("subject %q", got[0].Subject)
		}
	})
	t.Run("credentials never in the clear", func(t *testing.T) {
		s := smtptest.Start(t, smtptest.Options{User: "leadpipe", Pass: "s3cret"}) // no STARTTLS offered
		err := mailer(t, "smtp://leadpipe:s3cret@"+s.Addr, s).Send(ctx, message("x@acme.test"))
		if err == nil || len(s.Messages()) != 0 {
			t.Fatalf("sent credentials without TLS: %v", err)
		}
	})
	t.Run("implicit tls", func(t *testing.T) {
		s := smtptest.Start(t, smtptest.Options{TLS: true, Implicit: true, User: "u", Pass: "p"})
		if err := mailer(t, "smtps://u:p@"+s.Addr, s).Send(ctx, message("i@acme.test")); err != nil {
			t.Fatal(err)
		}
		if got := s.Messages(); len(got) != 1 || !got[0].TLS {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("local relay without tls", func(t *testing.T) {
		s := smtptest.Start(t, smtptest.Options{})
		if err := mailer(t, "smtp://"+s.Addr, s).Send(ctx, message("r@acme.test")); err != nil {
			t.Fatal(err)
		}
		if got := s.Messages(); len(got) != 1 || got[0].TLS {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("relay offering starttls", func(t *testing.T) {
		s := smtptest.Start(t, smtptest.Options{TLS: true})
		if err := mailer(t, "smtp://"+s.Addr, s).Send(ctx, message("o@acme.test")); err != nil {
			t.Fatal(err)
		}
		if got := s.Messages(); len(got) != 1 || !got[0].TLS {
			t.Fatalf("opportunistic STARTTLS not taken: %+v", got)
		}
	})
	for _, c := range []struct {
		name      string
		reply     error
		temporary bool
		code      int
	}{
		{"421", &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"}, true, 421},
		{"450", &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 2, 1}, Message: "mailbox busy"}, true, 450},
		{"550", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}, false, 550},
		{"cut after DATA", smtptest.Cut, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := smtptest.Start(t, smtptest.Options{TLS: true, User: "u", Pass: "p",
				Script: func(int, string) error { return c.reply }})
			err := mailer(t, "smtp://u:p@"+s.Addr, s).Send(ctx, message("f@acme.test"))
			var se *notify.SendError
			if !errors.As(err, &se) || se.Temporary != c.temporary || se.Code != c.code {
				t.Fatalf("err %#v (%v), want temporary=%v code=%d", se, err, c.temporary, c.code)
			}
			if s.Tried("f@acme.test") != 1 {
				t.Fatalf("DATA reached %d times", s.Tried("f@acme.test"))
			}
		})
	}
}
