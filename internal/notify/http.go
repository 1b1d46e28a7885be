package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// poster posts JSON to one receiver. It follows no redirect (a receiver that moved is a
// misconfiguration, and a redirect may lead anywhere), and its errors name the receiver by scheme
// and host only: a webhook URL often carries its token in the path or the query.
type poster struct {
	url    string
	client *http.Client
	// tooManyTaken: a 429 means the receiver has the notice already (Flux's answer to a duplicate).
	tooManyTaken bool
}

func newPoster(rawURL string, transport http.RoundTripper) (*poster, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	return &poster{url: rawURL, client: &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// CheckURL accepts an absolute http or https URL; its error never shows the URL.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("not a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http or https URL")
	}
	return nil
}

// post sends body with header, and says whether the receiver took it: nil; a *RefusedError for an
// answer that will not change; any other error for one that may.
func (p *poster) post(ctx context.Context, body []byte, header http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return &RefusedError{Why: "the request cannot be made: " + redact(err, p.url).Error()}
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return redact(err, p.url)
	}
	// Read a little of the answer so the connection can be used again; what it says is not kept.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300, c == http.StatusTooManyRequests && p.tooManyTaken:
		return nil
	case c == http.StatusRequestTimeout, c == http.StatusTooManyRequests, c >= 500:
		return fmt.Errorf("%s answered %s", host(p.url), resp.Status)
	default:
		return &RefusedError{Why: fmt.Sprintf("%s answered %s", host(p.url), resp.Status)}
	}
}

// redact is err without the URL net/http puts in it.
func redact(err error, rawURL string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, host(rawURL), ue.Err)
	}
	return err
}

// host is the URL's scheme and host, all of it that an error or a log line shows.
func host(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the receiver"
	}
	return u.Scheme + "://" + u.Host
}
