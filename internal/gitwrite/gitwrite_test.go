package gitwrite

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"

	"github.com/rollgate/rollgate/internal/gitedit"
	"github.com/rollgate/rollgate/internal/gitwrite/gittest"
	"github.com/rollgate/rollgate/internal/registry"
)

const kustomization = `# production
images:
- name: ghcr.io/acme/web
  newTag: 1.2.0   # web
- name: ghcr.io/acme/api
  newTag: 2.0.0
`

var when = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

func remote(s *gittest.Server, url string) Remote {
	return Remote{URL: url, Branch: "main", Auth: &githttp.BasicAuth{Username: s.User, Password: s.Password}}
}

func setTag(image, tag string) Edit {
	return Edit{Path: "prod/kustomization.yaml", Change: func(old []byte, _ billy.Filesystem) ([]byte, error) {
		return gitedit.SetKustomizeImage(old, image, tag)
	}}
}

func TestEditsOfManyConfigsAreOneCommit(t *testing.T) {
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	newFile := Edit{Path: "records/api.yaml", Change: func([]byte, billy.Filesystem) ([]byte, error) { return []byte("x\n"), nil }}
	broken := Edit{Path: "prod/kustomization.yaml", Change: func([]byte, billy.Filesystem) ([]byte, error) { return nil, errors.New("no such image") }}

	res, err := Write(context.Background(), remote(s, url),
		Commit{Name: "rollgate", Email: "rollgate@example.com", When: when, Message: Says("rollgate: web 1.3.0, api 2.1.0")},
		[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}, {setTag("ghcr.io/acme/api", "2.1.0")},
			// All or nothing: neither the new file nor api 9.9.9 of this change stays.
			{newFile, setTag("ghcr.io/acme/api", "9.9.9"), broken}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hash.IsZero() || res.Pushes != 1 || len(res.Changed) != 1 {
		t.Errorf("result %+v, want one commit of one file, pushed once", res)
	}
	if res.Errors[0] != nil || res.Errors[1] != nil || res.Errors[2] == nil {
		t.Errorf("errors %v: want the broken change's alone", res.Errors)
	}
	// Read back by git itself.
	bare := s.Bare("fleet")
	want := strings.Replace(strings.Replace(kustomization, "1.2.0", "1.3.0", 1), "2.0.0", "2.1.0", 1)
	if got := gittest.Git(t, bare, "show", "main:prod/kustomization.yaml"); got != want {
		t.Errorf("the branch has\n%s\nwant\n%s", got, want)
	}
	if got := gittest.Git(t, bare, "log", "-1", "--format=%H|%an <%ae>|%aI|%s", "main"); got != fmt.Sprintf("%s|rollgate <rollgate@example.com>|2026-12-01T03:00:00+00:00|rollgate: web 1.3.0, api 2.1.0\n", res.Hash) {
		t.Errorf("head commit %q", got)
	}
	if files := gittest.Git(t, bare, "ls-tree", "-r", "--name-only", "main"); files != "prod/kustomization.yaml\n" {
		t.Errorf("files on main:\n%s", files)
	}
	if n := strings.Count(gittest.Git(t, bare, "log", "--format=%H", "main"), "\n"); n != 2 {
		t.Errorf("%d commits on main, want the initial one and rollgate's", n)
	}
}

func TestNothingChangedIsNoCommit(t *testing.T) {
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	before := gittest.Git(t, s.Bare("fleet"), "rev-parse", "main")
	res, err := Write(context.Background(), remote(s, url), Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")},
		[]Change{{setTag("ghcr.io/acme/web", "1.2.0")}, // already so
			{setTag("ghcr.io/acme/api", "9.9.9")}, {setTag("ghcr.io/acme/api", "2.0.0")}}) // changed and changed back
	if err != nil {
		t.Fatal(err)
	}
	if !res.Hash.IsZero() || res.Pushes != 0 || s.Pushes.Load() != 0 {
		t.Errorf("result %+v, %d pushes received: want no commit and no push", res, s.Pushes.Load())
	}
	if after := gittest.Git(t, s.Bare("fleet"), "rev-parse", "main"); after != before {
		t.Errorf("main moved from %s to %s", before, after)
	}
}

// Someone pushes between rollgate's clone and its push: rollgate's edits are made again on their
// commit, and neither change is lost.
func TestABranchThatMovedIsWrittenAgainOnItsNewHead(t *testing.T) {
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization, "README.md": "fleet\n"})
	someone := t.TempDir()
	gittest.Git(t, "", "clone", "--quiet", s.Bare("fleet"), someone)
	pushed := false
	race := Edit{Path: "prod/kustomization.yaml", Change: func(old []byte, _ billy.Filesystem) ([]byte, error) {
		if !pushed { // after rollgate's clone, before its push
			pushed = true
			gittest.Git(t, someone, "mv", "README.md", "README")
			gittest.Git(t, someone, "commit", "--quiet", "-m", "someone else's commit")
			gittest.Git(t, someone, "push", "--quiet", "origin", "main")
		}
		return gitedit.SetKustomizeImage(old, "ghcr.io/acme/web", "1.3.0")
	}}
	res, err := Write(context.Background(), remote(s, url), Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("web 1.3.0")}, []Change{{race}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pushes != 2 {
		t.Errorf("%d pushes, want 2: the first refused, the second on the new head", res.Pushes)
	}
	bare := s.Bare("fleet")
	if got := gittest.Git(t, bare, "log", "--format=%s", "main"); got != "web 1.3.0\nsomeone else's commit\ninitial\n" {
		t.Errorf("history of main:\n%s", got)
	}
	if got := gittest.Git(t, bare, "ls-tree", "--name-only", "main"); got != "README\nprod\n" {
		t.Errorf("the other commit's change is lost: main has\n%s", got)
	}
	if got := gittest.Git(t, bare, "show", "main:prod/kustomization.yaml"); !strings.Contains(got, "newTag: 1.3.0   # web") {
		t.Errorf("rollgate's change is lost:\n%s", got)
	}
}

func TestRefusedCredentialsAreNotRetriedNorShown(t *testing.T) {
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	r := remote(s, url)
	r.Auth = &githttp.BasicAuth{Username: s.User, Password: "wrong-password-123"}
	res, err := Write(context.Background(), r, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")},
		[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
	if err == nil {
		t.Fatal("wrong credentials wrote")
	}
	if strings.Contains(err.Error(), "wrong-password-123") || strings.Contains(err.Error(), s.Password) {
		t.Errorf("the error shows a secret: %v", err)
	}
	if !strings.Contains(err.Error(), "authentication") {
		t.Errorf("the error does not say credentials were refused: %v", err)
	}
	if res.Pushes != 0 || s.Pushes.Load() != 0 {
		t.Errorf("%d pushes", res.Pushes)
	}
}

// The manager's address policy (--git-allow) guards every Git request: a repository on a refused
// address is not asked anything.
func TestTheAddressPolicyRefusesAHostBeforeAnyRequest(t *testing.T) {
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	srv := s.ServeSSH(t)
	sshAuth, err := SSHAuth("git", srv.Identity, nil, []byte(srv.KnownHosts))
	if err != nil {
		t.Fatal(err)
	}
	policy := registry.AddressPolicy{}.RefusedWith(errors.New("not allowed by the test's policy"))
	useTransport(t, policy.Transport(), DefaultMaxResponseBytes)
	UseResolver(policy.Resolve)
	t.Cleanup(func() { UseResolver(nil) })
	for name, r := range map[string]Remote{
		"https":                                 remote(s, url),
		"ssh":                                   {URL: srv.URL + "/fleet.git", Branch: "main", Auth: sshAuth},
		"ssh, a name that resolves to loopback": {URL: "ssh://git@localhost:" + srv.HostAddress[len("127.0.0.1:"):] + "/fleet.git", Branch: "main", Auth: sshAuth},
	} {
		_, err := Write(context.Background(), r, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")},
			[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
		if err == nil || !strings.Contains(err.Error(), "not allowed by the test's policy") {
			t.Errorf("%s: error %v, want the policy's refusal", name, err)
		}
	}
	if n := s.Requests.Load(); n != 0 {
		t.Errorf("%d requests reached the refused host", n)
	}
}

// useTransport installs the manager's Git transport for the test, go-git's own after it.
func useTransport(t *testing.T, rt http.RoundTripper, maxBytes int64) {
	UseTransport(rt, maxBytes)
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
}

// A Git server that answers 401, 403 or 404 with a body (here 64 MiB of an internal service's
// answer) costs the manager nothing to read, and none of it reaches the error a tenant sees: the
// error says what the status means.
func TestAnErrorAnswerIsNeitherReadNorShown(t *testing.T) {
	useTransport(t, http.DefaultTransport, DefaultMaxResponseBytes)
	for status, says := range map[int]string{http.StatusUnauthorized: "authentication required", http.StatusForbidden: "authorization failed",
		http.StatusNotFound: "repository not found"} {
		var sent atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			chunk := []byte(strings.Repeat("internal-answer ", 4096))
			for range (64 << 20) / len(chunk) {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Write(context.Background(), Remote{URL: srv.URL + "/fleet.git", Branch: "main"},
			Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")}, []Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
		runtime.ReadMemStats(&after)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "internal-answer") ||
			!strings.HasSuffix(err.Error(), fmt.Sprintf(": HTTP %d, the server's answer is not shown", status)) {
			t.Errorf("%d: error %v; want one saying %q and the status, and nothing of the body", status, err, says)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
			t.Errorf("%d: the write allocated %d MiB for a body it does not need", status, n>>20)
		}
	}
}

// A branch whose shallow clone is larger than the byte cap fails its write with an error that says
// so, instead of filling the manager's memory.
func TestARepositoryPastTheByteCapFailsClearly(t *testing.T) {
	s := gittest.New(t)
	noise := make([]byte, 1<<20)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization, "blob.bin": fmt.Sprintf("%x", noise)})
	useTransport(t, http.DefaultTransport, 256<<10)
	_, err := Write(context.Background(), remote(s, url), Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")},
		[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
	var tooLarge ErrTooLarge
	if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "more than 256 KiB in one answer") {
		t.Errorf("error %v; want the byte cap's", err)
	}
	if s.Pushes.Load() != 0 {
		t.Error("a write past the cap pushed")
	}
	useTransport(t, http.DefaultTransport, DefaultMaxResponseBytes)
	if _, err := Write(context.Background(), remote(s, url), Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")},
		[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}}); err != nil {
		t.Errorf("within the default cap: %v", err)
	}
}

// BenchmarkWrite100Edits: the edits of 100 configs to one kustomization in one write: the time of
// the write (clone, edits, commit, push) against the real git http-backend.
func BenchmarkWrite100Edits(b *testing.B) {
	s := gittest.New(b)
	var k strings.Builder
	k.WriteString("images:\n")
	for i := range 100 {
		fmt.Fprintf(&k, "- name: ghcr.io/acme/app-%d\n  newTag: 1.0.0\n", i)
	}
	url := s.Repo(b, "fleet", map[string]string{"prod/kustomization.yaml": k.String()})
	r := remote(s, url)
	round := 0
	var commits int
	for b.Loop() {
		round++
		changes := make([]Change, 100)
		for i := range changes {
			changes[i] = Change{setTag(fmt.Sprintf("ghcr.io/acme/app-%d", i), fmt.Sprintf("1.%d.0", round))}
		}
		res, err := Write(context.Background(), r, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("100 configs")}, changes)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Hash.IsZero() {
			commits++
		}
	}
	b.ReportMetric(float64(commits)/float64(round), "commits/write")
	b.ReportMetric(float64(s.Pushes.Load())/float64(round), "pushes/write")
}

func TestASignedCommitVerifiesWithThePublicKey(t *testing.T) {
	private, public := gittest.SigningKey(t, "correct horse")
	key, err := ReadSigningKey(private, []byte("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	res, err := Write(context.Background(), remote(s, url), Commit{Name: "rollgate", Email: "rollgate@example.com", When: when,
		Message: Says("signed"), SignKey: key}, []Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainOpen(s.Bare("fleet"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(res.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if c.PGPSignature == "" {
		t.Fatal("the commit is not signed")
	}
	if _, err := c.Verify(string(public)); err != nil {
		t.Errorf("the signature does not verify: %v", err)
	}
	_, other := gittest.SigningKey(t, "")
	if _, err := c.Verify(string(other)); err == nil {
		t.Error("another key verifies the signature")
	}
}

func TestASigningKeySaysWhatIsWrongWithoutShowingIt(t *testing.T) {
	encrypted, public := gittest.SigningKey(t, "correct horse")
	plain, _ := gittest.SigningKey(t, "")
	for _, tc := range []struct {
		name            string
		key, passphrase []byte
		err             string
	}{
		{"not a key", []byte("correct horse"), nil, "not an armored OpenPGP key ring"},
		{"a public key", public, nil, "holds no private key"},
		{"no passphrase", encrypted, nil, "no passphrase is given"},
		{"a wrong passphrase", encrypted, []byte("battery staple"), "does not decrypt"},
		{"unencrypted", plain, nil, ""},
		{"unencrypted, a passphrase given", plain, []byte("x"), ""},
	} {
		_, err := ReadSigningKey(tc.key, tc.passphrase)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		case err != nil && (strings.Contains(err.Error(), "horse") || strings.Contains(err.Error(), "staple") || strings.Contains(err.Error(), "BEGIN PGP")):
			t.Errorf("%s: the error shows a secret: %v", tc.name, err)
		}
	}
}

// With a push branch the commits go there, made on it once it exists (each outcome adds to the
// pull request), on the branch before that; the branch itself is never written.
func TestAPushBranchCollectsTheCommitsForAPullRequest(t *testing.T) {
	s := gittest.New(t)
	url := s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	bare := s.Bare("fleet")
	main := gittest.Git(t, bare, "rev-parse", "main")
	r := remote(s, url)
	r.PushBranch = "rollgate/outcomes"
	for _, tc := range []struct{ image, tag, message string }{
		{"ghcr.io/acme/web", "1.3.0", "web 1.3.0"},
		{"ghcr.io/acme/api", "2.1.0", "api 2.1.0"},
	} {
		if _, err := Write(context.Background(), r, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says(tc.message)},
			[]Change{{setTag(tc.image, tc.tag)}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := gittest.Git(t, bare, "rev-parse", "main"); got != main {
		t.Error("main was written")
	}
	if got := gittest.Git(t, bare, "log", "--format=%s", "rollgate/outcomes"); got != "api 2.1.0\nweb 1.3.0\ninitial\n" {
		t.Errorf("history of the push branch:\n%s", got)
	}
	want := strings.Replace(strings.Replace(kustomization, "1.2.0", "1.3.0", 1), "2.0.0", "2.1.0", 1)
	if got := gittest.Git(t, bare, "show", "rollgate/outcomes:prod/kustomization.yaml"); got != want {
		t.Errorf("the push branch has\n%s\nwant\n%s", got, want)
	}
	// What the push branch says already makes no commit.
	res, err := Write(context.Background(), r, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("again")},
		[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
	if err != nil || !res.Hash.IsZero() {
		t.Errorf("a write of what the push branch says: %+v, %v", res, err)
	}
}

// Over SSH, with a key and known_hosts: the real git-receive-pack gets the commit; a host whose key
// known_hosts does not list is refused before anything is sent.
func TestSSHWithAKeyAndKnownHosts(t *testing.T) {
	s := gittest.New(t)
	s.Repo(t, "fleet", map[string]string{"prod/kustomization.yaml": kustomization})
	srv := s.ServeSSH(t)
	auth, err := SSHAuth("git", srv.Identity, nil, []byte(srv.KnownHosts+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := Remote{URL: srv.URL + "/fleet.git", Branch: "main", Auth: auth}
	res, err := Write(context.Background(), r, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("over ssh")},
		[]Change{{setTag("ghcr.io/acme/web", "1.3.0")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, s.Bare("fleet"), "log", "-1", "--format=%H %s", "main"); got != res.Hash.String()+" over ssh\n" || s.Pushes.Load() != 1 {
		t.Errorf("head %q, %d pushes", got, s.Pushes.Load())
	}

	other := s.ServeSSH(t) // another host key
	wrong, err := SSHAuth("git", srv.Identity, nil, []byte(strings.Replace(other.KnownHosts, other.HostAddress[len("127.0.0.1:"):], srv.HostAddress[len("127.0.0.1:"):], 1)))
	if err != nil {
		t.Fatal(err)
	}
	requests := s.Requests.Load()
	_, err = Write(context.Background(), Remote{URL: r.URL, Branch: "main", Auth: wrong}, Commit{Name: "rollgate", Email: "r@example.com", When: when, Message: Says("m")},
		[]Change{{setTag("ghcr.io/acme/web", "1.4.0")}})
	if err == nil || !strings.Contains(err.Error(), "key") || s.Requests.Load() != requests {
		t.Errorf("a host key known_hosts does not list: %v, %d requests served", err, s.Requests.Load()-requests)
	}
}

func TestSSHCredentialsSayWhatIsWrongWithoutShowingThem(t *testing.T) {
	srv := gittest.New(t).ServeSSH(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	encrypted := pem.EncodeToMemory(block)
	if _, err := SSHAuth("git", encrypted, []byte("hunter2"), []byte(srv.KnownHosts)); err != nil {
		t.Errorf("an encrypted key with its passphrase: %v", err)
	}
	for _, tc := range []struct {
		name                        string
		identity, passphrase, hosts []byte
		err                         string
	}{
		{"not a key", []byte("hunter2"), nil, []byte(srv.KnownHosts), "not a private key"},
		{"no known_hosts", srv.Identity, nil, nil, "no known_hosts"},
		{"known_hosts that is not", srv.Identity, nil, []byte("[127.0.0.1]:1 ssh-ed25519 hunter2\n"), "known_hosts"},
		{"an encrypted key, no passphrase", encrypted, nil, []byte(srv.KnownHosts), "no passphrase is given"},
		{"an encrypted key, a wrong passphrase", encrypted, []byte("hunter3"), []byte(srv.KnownHosts), "does not decrypt"},
	} {
		_, err := SSHAuth("git", tc.identity, tc.passphrase, tc.hosts)
		if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: error %v, want one saying %q and no secret", tc.name, err, tc.err)
		}
	}
}
