package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/rollgate/rollgate/internal/registry/registrytest"
)

// testRegistry is go-containerregistry's in-memory registry on 127.0.0.1, holding repository
// demo/app with the given tags. Its tag list is paginated the way real registries do it: n tags a
// page and a Link header to the next page.
func testRegistry(t *testing.T, tags ...string) (host string, answer func(code int, header http.Header)) {
	t.Helper()
	reg := registrytest.Handler()
	var forced struct {
		code   int
		header http.Header
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			if forced.code != 0 {
				for k, v := range forced.header {
					w.Header()[k] = v
				}
				w.WriteHeader(forced.code)
				fmt.Fprintf(w, `{"errors":[{"code":"FORCED","message":"answered %d on purpose"}]}`, forced.code)
				return
			}
			paginate(w, r, reg)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	registrytest.Push(t, host, "demo/app", tags...)
	return host, func(code int, header http.Header) { forced.code, forced.header = code, header }
}

// paginate serves a tag list page and adds the Link header of the next one when the page is full.
func paginate(w http.ResponseWriter, r *http.Request, reg http.Handler) {
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, r)
	var page struct {
		Tags []string `json:"tags"`
	}
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &page) == nil && n > 0 && len(page.Tags) == n {
		next := url.Values{"n": {strconv.Itoa(n)}, "last": {page.Tags[n-1]}}
		w.Header().Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, r.URL.Path, next.Encode()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func TestRemoteListsEveryPage(t *testing.T) {
	want := []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "latest"}
	host, _ := testRegistry(t, want...)
	got, err := Remote{PageSize: 2, Transport: loopback(t).Transport}.ListTags(context.Background(), host+"/demo/app", authn.DefaultKeychain)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("tags = %v, want %v", got, want)
	}
}

func TestRemoteClassifiesFailures(t *testing.T) {
	cases := []struct {
		code       int
		header     http.Header
		says       string
		retryAfter time.Duration
	}{
		{http.StatusUnauthorized, nil, "registry refused access (401)", 0},
		{http.StatusForbidden, nil, "check the workload's imagePullSecrets", 0},
		{http.StatusNotFound, nil, "repository not found in the registry (404)", 0},
		{http.StatusTooManyRequests, http.Header{"Retry-After": {"120"}}, "registry rate limit (429)", 2 * time.Minute},
		{http.StatusInternalServerError, nil, "registry failed (500)", 0},
		{http.StatusServiceUnavailable, http.Header{"Retry-After": {"30"}}, "registry failed (503)", 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			host, answer := testRegistry(t, "1.0.0")
			answer(tc.code, tc.header)
			_, err := loopback(t).ListTags(context.Background(), host+"/demo/app", authn.DefaultKeychain)
			var re *Error
			if !errors.As(err, &re) || re.StatusCode != tc.code || re.RetryAfter != tc.retryAfter || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error = %v (%+v), want status %d, retry after %s, saying %q", err, re, tc.code, tc.retryAfter, tc.says)
			}
			// What the registry wrote goes to the log (the wrapped error), never into the message a
			// tenant reads in a condition or event: a registry is not a way to read another host.
			if strings.Contains(err.Error(), "on purpose") || !strings.Contains(errors.Unwrap(err).Error(), "on purpose") {
				t.Errorf("message %q, wrapped %q: the registry's words belong to the wrapped error only", err, errors.Unwrap(err))
			}
		})
	}
}

func TestRemoteUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing listens there any more
	_, err := loopback(t).ListTags(context.Background(), host+"/demo/app", authn.DefaultKeychain)
	var re *Error
	if !errors.As(err, &re) || re.StatusCode != 0 || err.Error() != "registry unreachable (connection refused)" {
		t.Fatalf("error = %v, want only the kind of failure, not the address", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"0":                             0,
		"90":                            90 * time.Second,
		"Tue, 01 Dec 2026 03:05:00 GMT": 5 * time.Minute,
		"Tue, 01 Dec 2026 02:55:00 GMT": 0, // already past
	}
	for v, want := range cases {
		if got, ok := parseRetryAfter(v, now); !ok || got != want {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-5"} {
		if _, ok := parseRetryAfter(v, now); ok {
			t.Errorf("parseRetryAfter(%q) accepted", v)
		}
	}
}

// failingIdentity is a cloud identity that cannot be had.
type failingIdentity struct{}

func (failingIdentity) Resolve(authn.Resource) (authn.Authenticator, error) {
	return nil, &IdentityError{Cloud: "AWS", Host: "ecr.example", Err: errors.New("no ECR token")}
}

// A listing whose credential cannot be had says whose, not only that the registry gave no answer.
func TestRemoteNamesTheIdentityItCouldNotHave(t *testing.T) {
	host, _ := testRegistry(t, "1.0.0")
	_, err := loopback(t).ListTags(context.Background(), host+"/demo/app", failingIdentity{})
	if err == nil || err.Error() != "registry unreachable (the manager's AWS identity got no credential for ecr.example (the manager's log says why))" {
		t.Fatalf("error = %v", err)
	}
}
