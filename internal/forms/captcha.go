package forms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"leadpipe/internal/outbound"
)

// Siteverify endpoints of the providers (Cloudflare Turnstile and hCaptcha
// both take a form-encoded POST of secret, response and remoteip and answer
// {"success":bool,"error-codes":[…]}).
var DefaultVerifyURLs = map[string]string{
	Turnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
	HCaptcha:  "https://api.hcaptcha.com/siteverify",
}

// ResponseParam is the form field each provider's widget fills in.
var ResponseParam = map[string]string{
	Turnstile: "cf-turnstile-response",
	HCaptcha:  "h-captcha-response",
}

// CaptchaTimeout bounds one check: a person is waiting for the answer.
const CaptchaTimeout = 5 * time.Second

// errCaptchaRejected: the provider said no.
var errCaptchaRejected = errors.New("the captcha answer was not accepted")

// captchaVerifier checks captcha answers server-side through the outbound
// client (SSRF guard, short timeouts, no retries of the POST).
type captchaVerifier struct {
	client *outbound.Client
	urls   map[string]string
}

// verify returns nil when the provider accepted the answer,
// errCaptchaRejected when it refused it, and any other error when it
// could not be asked (the submission is then held, docs/FORMS.md).
func (c captchaVerifier) verify(ctx context.Context, provider, secret, answer, ip string) error {
	if answer == "" {
		return errCaptchaRejected
	}
	endpoint := c.urls[provider]
	if endpoint == "" {
		endpoint = DefaultVerifyURLs[provider]
	}
	ctx, cancel := context.WithTimeout(ctx, CaptchaTimeout)
	defer cancel()
	form := url.Values{"secret": {secret}, "response": {answer}}
	if ip != "" {
		form.Set("remoteip", ip)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(ctx, req)
	if err != nil {
		return fmt.Errorf("captcha provider unreachable: %w", err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return fmt.Errorf("captcha provider answered HTTP %d", resp.Status)
	}
	var out struct {
		Success bool     `json:"success"`
		Codes   []string `json:"error-codes"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return fmt.Errorf("captcha provider answered something else than JSON: %w", err)
	}
	if !out.Success {
		return errCaptchaRejected
	}
	return nil
}

// SetCaptchaURLs points the captcha checks at other siteverify URLs (a
// fake provider in tests), by provider.
func (s *Service) SetCaptchaURLs(urls map[string]string) { s.captcha.urls = urls }
