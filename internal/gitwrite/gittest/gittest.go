// Package gittest serves Git repositories on 127.0.0.1 for tests: the real `git http-backend`
// behind Go's CGI handler, with HTTP basic auth, as a Git host serves them.
package gittest

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Server serves the bare repositories under Root at URL/<name>.git.
type Server struct {
	URL, Root      string
	User, Password string
	// Requests counts every request that reached the server; Pushes the pushes among them
	// (accepted or not).
	Requests, Pushes atomic.Int64
	// Intercept, when set, sees each request first and answers it in place of the repository when
	// it reports true: an outage, a refused push, a proxy's error page.
	Intercept atomic.Pointer[Interceptor]
}

// Interceptor answers a request in place of the repository, and reports whether it did.
type Interceptor func(w http.ResponseWriter, r *http.Request) (answered bool)

// IsPush: the request pushes (git-receive-pack).
func IsPush(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
}

// New starts a server; the test's end stops it.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{Root: t.TempDir(), User: "rollgate", Password: "s3cret-token"}
	backend := &cgi.Handler{Path: gitPath(t), Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		if answer := s.Intercept.Load(); answer != nil && (*answer)(w, r) {
			return
		}
		if u, p, ok := r.BasicAuth(); !ok || u != s.User || p != s.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if IsPush(r) {
			s.Pushes.Add(1)
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Repo creates the bare repository name.git with one commit of files on branch main, and returns
// its URL.
func (s *Server) Repo(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(s.Root, name+".git")
	Git(t, "", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	Git(t, bare, "config", "http.receivepack", "true")
	work := t.TempDir()
	Git(t, work, "init", "--quiet", "--initial-branch=main")
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, work, "add", ".")
	Git(t, work, "commit", "--quiet", "-m", "initial")
	Git(t, work, "push", "--quiet", bare, "main")
	return s.URL + "/" + name + ".git"
}

// Bare is the directory of the bare repository name.git, for reading it with Git.
func (s *Server) Bare(name string) string { return filepath.Join(s.Root, name+".git") }

// Git runs git in dir (the current directory when "") as the test's author and returns its output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitPath(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func gitPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	return p
}
