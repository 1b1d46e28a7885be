package gitwrite

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// DefaultMaxResponseBytes bounds one answer of a Git server over HTTP(S): the pack of a shallow
// clone of one branch, which go-git holds in memory (and more once unpacked), for up to four
// repositories at once under the manager's memory limit.
const DefaultMaxResponseBytes = 32 << 20

// UseTransport makes every Git request over HTTP(S) of this process go through rt (the manager's
// address policy, --git-allow), with each answer bounded: a body past maxBytes fails the write
// with a clear error, and the body of an error answer is never read (see bounded). go-git takes
// its HTTP client per protocol, for the whole process.
func UseTransport(rt http.RoundTripper, maxBytes int64) {
	c := githttp.NewClient(&http.Client{Transport: bounded{base: rt, max: maxBytes}, Timeout: 5 * time.Minute})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}

// bounded bounds what a Git server's answers cost. go-git reads the body of a 401, 403 or 404
// whole into memory and into its error, which reaches the tenant's condition: an endless body
// would fill the manager's memory, and any body would let a tenant read another service's answers
// through the manager. Such a body is dropped unread: the error says what the status means, in
// go-git's words, and the status code. Other bodies count against max.
type bounded struct {
	base http.RoundTripper
	max  int64
}

func (t bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		_ = resp.Body.Close()
		// go-git puts the body after what the status means: ours says only the status.
		note := fmt.Sprintf("HTTP %d, the server's answer is not shown", resp.StatusCode)
		resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader(note)), int64(len(note))
		return resp, nil
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	return resp, nil
}

// ErrTooLarge: a Git server's answer passed the byte cap.
type ErrTooLarge struct{ Max int64 }

func (e ErrTooLarge) Error() string {
	size := fmt.Sprintf("%d MiB", e.Max>>20)
	if e.Max < 1<<20 {
		size = fmt.Sprintf("%d KiB", e.Max>>10)
	}
	return "the Git server sent more than " + size + " in one answer: rollgate clones the branch's head into memory, " +
		"and stops there (a repository this large needs a larger --git-max-bytes and memory limit, or a smaller repository for rollgate's files)"
}

type cappedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrTooLarge{Max: b.max}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a body that ends at the cap from one beyond
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, ErrTooLarge{Max: b.max}
	}
	return n, err
}
