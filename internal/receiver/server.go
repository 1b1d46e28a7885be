package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"
)

// Receiver is one sender the cluster admin allows, and the token it proves itself with.
type Receiver struct {
	// Name is its part of the URL: /hook/<name>.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Token: GitHub and the generic form sign the body with it (X-Hub-Signature-256:
	// sha256=<HMAC-SHA256>), Harbor sends it as its Authorization header, and Docker Hub, which
	// can do neither, has it in the URL path: /hook/<name>/<token>.
	Token string `json:"token"`
}

// authentic reports whether r sent a request with this path token, headers and body.
func (r Receiver) authentic(pathToken string, h http.Header, body []byte) bool {
	switch r.Kind {
	case DockerHub:
		return equal(pathToken, r.Token)
	case Harbor:
		return equal(h.Get("Authorization"), r.Token)
	}
	sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
	got, err := hex.DecodeString(sig)
	if !ok || err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(r.Token))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Limits of the endpoint: it faces the internet, where the registries are.
const (
	MaxBody          = 1 << 20 // bytes of one notification
	RequestsPerSec   = 5       // of one receiver, with bursts of 20
	requestBurst     = 20
	maxTokenLength   = 4096
	readTimeout      = 10 * time.Second
	handleTimeout    = 10 * time.Second
	shutdownDeadline = 5 * time.Second
)

// ReadFile reads the receivers of a file the cluster admin mounts (a Secret): a list of name,
// kind and token, YAML or JSON. Each name is unique and each token at least 16 characters.
func ReadFile(path string) ([]Receiver, error) {
	raw, err := os.ReadFile(path) //nolint:gosec // the file the admin names with --receivers-file
	if err != nil {
		return nil, err
	}
	var rs []Receiver
	if err := yaml.UnmarshalStrict(raw, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i, r := range rs {
		switch {
		case r.Name == "" || strings.ContainsAny(r.Name, "/?#%") || seen[r.Name]:
			return nil, fmt.Errorf("%s: receiver %d: a name is unique and has no '/', '?', '#' or '%%': %q", path, i, r.Name)
		case r.Kind != DockerHub && r.Kind != Harbor && r.Kind != GHCR && r.Kind != Generic:
			return nil, fmt.Errorf("%s: receiver %s: kind %q is none of dockerhub, harbor, ghcr, generic", path, r.Name, r.Kind)
		case len(r.Token) < 16 || len(r.Token) > maxTokenLength:
			return nil, fmt.Errorf("%s: receiver %s: the token must have 16 to %d characters", path, r.Name, maxTokenLength)
		}
		seen[r.Name] = true
	}
	return rs, nil
}

var requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rollgate_receiver_requests_total",
	Help: "Push notifications the receiver endpoint answered, by receiver and result."}, []string{"receiver", "result"})

func init() { metrics.Registry.MustRegister(requestsTotal) }

// Results of a request, as counted.
const (
	ResultAccepted     = "Accepted"
	ResultIgnored      = "Ignored"
	ResultUnauthorized = "Unauthorized"
	ResultBadRequest   = "BadRequest"
	ResultLimited      = "Limited"
)

// Handler answers the notifications of receivers at /hook/<name>, and passes each pushed
// repository to pushed, which says how many configs it woke.
type Handler struct {
	receivers map[string]Receiver
	limits    map[string]*rate.Limiter
	pushed    func(ctx context.Context, repository string) int
}

// NewHandler serves receivers.
func NewHandler(receivers []Receiver, pushed func(ctx context.Context, repository string) int) *Handler {
	h := &Handler{receivers: map[string]Receiver{}, limits: map[string]*rate.Limiter{}, pushed: pushed}
	for _, r := range receivers {
		h.receivers[r.Name] = r
		h.limits[r.Name] = rate.NewLimiter(RequestsPerSec, requestBurst)
		for _, result := range []string{ResultAccepted, ResultIgnored, ResultUnauthorized, ResultBadRequest, ResultLimited} {
			requestsTotal.WithLabelValues(r.Name, result)
		}
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, "/hook/")
	name, pathToken, _ := strings.Cut(rest, "/")
	r, known := h.receivers[name]
	if !ok || !known || req.Method != http.MethodPost {
		http.NotFound(w, req) // an unknown receiver is not told from a wrong path
		return
	}
	answer := func(code int, result, msg string) {
		requestsTotal.WithLabelValues(name, result).Inc()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"result": result, "message": msg})
	}
	if !h.limits[name].Allow() {
		answer(http.StatusTooManyRequests, ResultLimited, fmt.Sprintf("more than %d notifications a second", RequestsPerSec))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
	if err != nil {
		answer(http.StatusBadRequest, ResultBadRequest, "the body could not be read, or is larger than 1 MiB")
		return
	}
	if !r.authentic(pathToken, req.Header, body) {
		answer(http.StatusUnauthorized, ResultUnauthorized, "not signed or authorized with the receiver's token")
		return
	}
	pushes, err := Parse(r.Kind, req.Header.Get("X-GitHub-Event"), body)
	switch {
	case errors.Is(err, ErrIgnored):
		answer(http.StatusAccepted, ResultIgnored, "not a push: nothing to look at")
		return
	case err != nil:
		answer(http.StatusBadRequest, ResultBadRequest, "not a "+string(r.Kind)+" push notification: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), handleTimeout)
	defer cancel()
	woken := 0
	for _, p := range pushes {
		woken += h.pushed(ctx, p.Repository)
	}
	answer(http.StatusAccepted, ResultAccepted, fmt.Sprintf("%d configs look at %s now", woken, pushes[0].Repository))
}

// Server serves a Handler on an address until its context ends: a manager.Runnable.
type Server struct {
	Addr    string
	Handler http.Handler
}

// Start listens and serves until ctx ends.
func (s Server) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("the receiver endpoint: %w", err)
	}
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout,
		WriteTimeout: handleTimeout + readTimeout, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownDeadline)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NeedLeaderElection: only the leader listens, as only its engine runs and its registry answers
// are the ones to expire. A notification that reaches no leader (a restart) is lost, and the poll
// finds the push.
func (Server) NeedLeaderElection() bool { return true }
