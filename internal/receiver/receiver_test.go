package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each sender's push notification, as its documentation shows it, names the pushed repository.
func TestParseThePushesOfEachSender(t *testing.T) {
	cases := []struct {
		name  string
		kind  Kind
		event string
		body  string
		want  []Push
		err   error // ErrIgnored, or any error when non-nil and not ErrIgnored
	}{
		{name: "Docker Hub", kind: DockerHub,
			body: `{"callback_url":"https://registry.hub.docker.com/u/acme/web/hook/x/","push_data":{"pushed_at":1733140000,"pusher":"ci","tag":"1.4.0"},"repository":{"name":"web","namespace":"acme","repo_name":"acme/web","repo_url":"https://hub.docker.com/r/acme/web"}}`,
			want: []Push{{Repository: "index.docker.io/acme/web", Tag: "1.4.0"}}},
		{name: "Harbor", kind: Harbor,
			body: `{"type":"PUSH_ARTIFACT","occur_at":1733140000,"operator":"ci","event_data":{"resources":[{"digest":"sha256:aa","tag":"1.4.0","resource_url":"harbor.example.com/library/web:1.4.0"}],"repository":{"name":"web","namespace":"library","repo_full_name":"library/web","repo_type":"private"}}}`,
			want: []Push{{Repository: "harbor.example.com/library/web", Tag: "1.4.0"}}},
		{name: "Harbor's deletion is no push", kind: Harbor, body: `{"type":"DELETE_ARTIFACT","event_data":{"resources":[]}}`, err: ErrIgnored},
		{name: "GitHub's container package", kind: GHCR, event: "package",
			body: `{"action":"published","package":{"name":"web","namespace":"acme","package_type":"CONTAINER","package_version":{"version":"sha256:aa","package_url":"ghcr.io/acme/web:1.4.0","container_metadata":{"tag":{"name":"1.4.0","digest":"sha256:aa"}}}}}`,
			want: []Push{{Repository: "ghcr.io/acme/web", Tag: "1.4.0"}}},
		{name: "GitHub's package without its URL", kind: GHCR, event: "package",
			body: `{"action":"published","package":{"name":"Web","namespace":"Acme","package_type":"container","package_version":{"container_metadata":{"tag":{"name":"1.4.0"}}}}}`,
			want: []Push{{Repository: "ghcr.io/acme/web", Tag: "1.4.0"}}},
		{name: "GitHub's ping", kind: GHCR, event: "ping", body: `{"zen":"Keep it logically awesome."}`, err: ErrIgnored},
		{name: "GitHub's npm package", kind: GHCR, event: "package", body: `{"action":"published","package":{"name":"web","package_type":"npm"}}`, err: ErrIgnored},
		{name: "the generic form", kind: Generic, body: `{"repository":"registry.example.com:5000/acme/web","tag":"1.4.0"}`,
			want: []Push{{Repository: "registry.example.com:5000/acme/web", Tag: "1.4.0"}}},
		{name: "the generic form with an image", kind: Generic, body: `{"repository":"registry.example.com/acme/web:1.4.0"}`,
			want: []Push{{Repository: "registry.example.com/acme/web", Tag: "1.4.0"}}},
		{name: "no repository", kind: Generic, body: `{"tag":"1.4.0"}`, err: errors.New("")},
		{name: "not JSON", kind: DockerHub, body: `push`, err: errors.New("")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.kind, tc.event, []byte(tc.body))
			switch {
			case errors.Is(tc.err, ErrIgnored) && !errors.Is(err, ErrIgnored), tc.err != nil && err == nil, tc.err == nil && err != nil:
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
		})
	}
}

func sign(token, body string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Only a receiver's own sender gets through, each as it can prove itself; what gets through wakes
// the configs of the pushed repository.
func TestTheEndpointLetsOnlyItsSendersIn(t *testing.T) {
	const token = "0123456789abcdef-token"
	var pushed []string
	h := NewHandler([]Receiver{{Name: "hub", Kind: DockerHub, Token: token}, {Name: "harbor", Kind: Harbor, Token: token},
		{Name: "gh", Kind: GHCR, Token: token}, {Name: "ci", Kind: Generic, Token: token}},
		func(_ context.Context, repository string) int { pushed = append(pushed, repository); return 2 })
	hub := `{"push_data":{"tag":"1.4.0"},"repository":{"repo_name":"acme/web"}}`
	generic := `{"repository":"registry.example.com/acme/web","tag":"1.4.0"}`
	cases := []struct {
		name    string
		path    string
		headers map[string]string
		body    string
		code    int
		pushed  []string
	}{
		{"Docker Hub with the token in its URL", "/hook/hub/" + token, nil, hub, http.StatusAccepted, []string{"index.docker.io/acme/web"}},
		{"Docker Hub with another token", "/hook/hub/not-the-token", nil, hub, http.StatusUnauthorized, nil},
		{"Harbor with its Authorization header", "/hook/harbor", map[string]string{"Authorization": token},
			`{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"1.4.0","resource_url":"harbor.example.com/library/web:1.4.0"}]}}`,
			http.StatusAccepted, []string{"harbor.example.com/library/web"}},
		{"Harbor without it", "/hook/harbor", nil, `{"type":"PUSH_ARTIFACT"}`, http.StatusUnauthorized, nil},
		{"a signed generic push", "/hook/ci", map[string]string{"X-Hub-Signature-256": sign(token, generic)}, generic,
			http.StatusAccepted, []string{"registry.example.com/acme/web"}},
		{"a generic push signed with another key", "/hook/ci", map[string]string{"X-Hub-Signature-256": sign("another-key-0123456", generic)},
			generic, http.StatusUnauthorized, nil},
		{"a generic push whose body changed after signing", "/hook/ci", map[string]string{"X-Hub-Signature-256": sign(token, generic)},
			strings.Replace(generic, "1.4.0", "9.9.9", 1), http.StatusUnauthorized, nil},
		{"GitHub's signed ping", "/hook/gh", map[string]string{"X-Hub-Signature-256": sign(token, `{}`), "X-GitHub-Event": "ping"}, `{}`,
			http.StatusAccepted, nil},
		{"a signed body that is no push of its kind", "/hook/ci", map[string]string{"X-Hub-Signature-256": sign(token, `{}`)}, `{}`,
			http.StatusBadRequest, nil},
		{"an unknown receiver", "/hook/nobody", nil, hub, http.StatusNotFound, nil},
		{"another path", "/hooks/hub/" + token, nil, hub, http.StatusNotFound, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pushed = nil
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || !cmp.Equal(pushed, tc.pushed) {
				t.Errorf("answer %d %s, pushed %v; want %d and %v", rec.Code, rec.Body, pushed, tc.code, tc.pushed)
			}
		})
	}
}

// A receiver's notifications are limited to a rate, and a body to 1 MiB.
func TestTheEndpointIsBounded(t *testing.T) {
	h := NewHandler([]Receiver{{Name: "hub", Kind: DockerHub, Token: "0123456789abcdef"}}, func(context.Context, string) int { return 0 })
	limited := 0
	for range requestBurst + 10 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hook/hub/wrong", strings.NewReader(`{}`)))
		if rec.Code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Errorf("%d requests at once were all answered", requestBurst+10)
	}
	h = NewHandler([]Receiver{{Name: "hub", Kind: DockerHub, Token: "0123456789abcdef"}}, func(context.Context, string) int { return 0 })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/hook/hub/0123456789abcdef", strings.NewReader(strings.Repeat(" ", MaxBody+1))))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a body over 1 MiB: %d", rec.Code)
	}
}

// The admin's file of receivers is checked whole before the manager starts.
func TestReceiversFile(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    string // a part of the error; "" for none
	}{
		{"- {name: hub, kind: dockerhub, token: 0123456789abcdef}\n- {name: ci, kind: generic, token: 0123456789abcdef}\n", ""},
		{"- {name: hub, kind: quay, token: 0123456789abcdef}\n", `kind "quay" is none of`},
		{"- {name: hub, kind: dockerhub, token: short}\n", "the token must have 16"},
		{"- {name: a/b, kind: dockerhub, token: 0123456789abcdef}\n", "a name is unique"},
		{"- {name: hub, kind: dockerhub, token: 0123456789abcdef}\n- {name: hub, kind: ghcr, token: 0123456789abcdef}\n", "a name is unique"},
		{"- {name: hub, kind: dockerhub, token: 0123456789abcdef, secret: x}\n", "unknown field"},
	} {
		path := filepath.Join(t.TempDir(), "receivers.yaml")
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(path)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: error %v, want %q", tc.content, err, tc.want)
		}
	}
}
