package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// hostile registries: each must cost one failed listing, bounded in time and memory.
func TestAListingIsBounded(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() { // accepts connections and never answers
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	endlessPages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			w.WriteHeader(http.StatusOK) // the /v2/ ping
			return
		}
		last := r.URL.Query().Get("last") + "x"
		w.Header().Set("Link", fmt.Sprintf(`</v2/demo/app/tags/list?n=1&last=%s>; rel="next"`, last))
		fmt.Fprintf(w, `{"name":"demo/app","tags":["%s"]}`, last)
	}))
	t.Cleanup(endlessPages.Close)
	endlessBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			w.WriteHeader(http.StatusOK)
			return
		}
		fmt.Fprint(w, `{"name":"demo/app","tags":["`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 1 << 14 { // 1 GiB, unless the reader stops
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(endlessBody.Close)

	local := loopback(t).Transport
	cases := []struct {
		name   string
		host   string
		remote Remote
		// expected
		wantSays string
	}{
		{name: "a registry that accepts and never answers times out", host: silent.Addr().String(),
			remote: Remote{Timeout: time.Second, Transport: local}, wantSays: "registry unreachable (no answer in time)"},
		{name: "a registry that pages for ever stops at the page cap", host: strings.TrimPrefix(endlessPages.URL, "http://"),
			remote: Remote{MaxPages: 50, Transport: local}, wantSays: "registry listing stopped: more than 50 pages of tags"},
		{name: "an endless tag list stops at the byte cap", host: strings.TrimPrefix(endlessBody.URL, "http://"),
			remote: Remote{MaxBytes: 1 << 20, Transport: local}, wantSays: errTooLarge.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			// The test's own guard: without the listing's bounds, the first case hangs until it.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := tc.remote.ListTags(ctx, tc.host+"/demo/app", authn.DefaultKeychain)
			var rerr *Error
			if !errors.As(err, &rerr) || !strings.Contains(err.Error(), tc.wantSays) {
				t.Fatalf("error = %v, want a listing error saying %q", err, tc.wantSays)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the listing took %s", took)
			}
		})
	}
}
