package notify

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// receiver is a webhook receiver on 127.0.0.1 whose answer to each request the test sets, and
// which keeps the IDs of the notices it took, in order, and of every request it got.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	answer   func(n int) int // the status of the nth request (from 1); 0 cuts the connection
	requests []string
	took     []string
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Header.Get(DeliveryHeader))
		status := r.answer(len(r.requests))
		if status >= 200 && status < 300 {
			r.took = append(r.took, req.Header.Get(DeliveryHeader))
		}
		r.mu.Unlock()
		if status == 0 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setAnswer(answer func(n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = answer
}

func (r *receiver) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.took)
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

func always(status int) func(int) int { return func(int) int { return status } }

var sinks atomic.Int64

// testQueue is a queue of size for a webhook to url, which tries again within milliseconds.
func testQueue(t *testing.T, url string, size int) *Queue {
	w, err := NewWebhook(url, []byte("key"), http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	// A sink of its own, so that a test run again (-count) starts its counters at zero.
	q := NewQueue(fmt.Sprintf("%s-%d", t.Name(), sinks.Add(1)), w, size)
	q.backoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 20 * time.Millisecond, Steps: 1000}
	q.flush = 50 * time.Millisecond
	return q
}

// run starts q until the test ends; stop stops it and waits until it has.
func run(t *testing.T, q *Queue) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = q.Start(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func notice(id string) Notice {
	return Notice{ID: id, Time: time.Now(), Type: corev1.EventTypeWarning, Reason: "UpdateRollback", Message: "rolled back " + id,
		Version: "1.2.0", Object: corev1.ObjectReference{APIVersion: "rollgate.dev/v1alpha1", Kind: "RollingUpgradeConfig", Namespace: "shop", Name: "web"}}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func count(q *Queue) string {
	return fmt.Sprintf("sent %v, failures %v, dropped QueueFull %v Refused %v Stopped %v, queued %v",
		testutil.ToFloat64(q.m.sent), testutil.ToFloat64(q.m.failures), testutil.ToFloat64(q.m.full),
		testutil.ToFloat64(q.m.refused), testutil.ToFloat64(q.m.stoppedDropped), testutil.ToFloat64(q.m.queued))
}

// A receiver that fails gets every notice, in order, once it answers again.
func TestASinkThatFailsGetsEveryNoticeInOrder(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	q := testQueue(t, r.URL, 10)
	run(t, q)
	for _, id := range []string{"1", "2", "3"} {
		q.Offer(notice(id))
	}
	waitUntil(t, "three notices taken", func() bool { return len(r.taken()) == 3 })
	if got := r.taken(); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("taken %v, want 1 2 3 in order", got)
	}
	waitUntil(t, "the queue empty", func() bool { return testutil.ToFloat64(q.m.queued) == 0 })
	if got, want := count(q), "sent 3, failures 3, dropped QueueFull 0 Refused 0 Stopped 0, queued 0"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// A receiver slower than a try is tried again with the same delivery ID.
func TestASlowSinkIsTriedAgainWithTheSameID(t *testing.T) {
	var slow atomic.Bool
	slow.Store(true)
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Header.Get(DeliveryHeader))
		r.mu.Unlock()
		if slow.CompareAndSwap(true, false) {
			time.Sleep(300 * time.Millisecond) // past the try
		}
	}))
	t.Cleanup(r.Close)
	q := testQueue(t, r.URL, 10)
	q.try = 100 * time.Millisecond
	run(t, q)
	q.Offer(notice("slow-1"))
	waitUntil(t, "the notice sent", func() bool { return testutil.ToFloat64(q.m.sent) == 1 })
	if got := r.got(); !slices.Equal(got, []string{"slow-1", "slow-1"}) {
		t.Errorf("requests %v, want the notice twice, under one ID", got)
	}
	if got := testutil.ToFloat64(q.m.failures); got != 1 {
		t.Errorf("failures %v, want 1 (the try that timed out)", got)
	}
}

// A receiver that is down costs the queue's bound: the queue holds its size and the one in hand,
// drops and counts the rest, and loses none of those it holds.
func TestASinkThatIsDownLosesNothingWithinTheBound(t *testing.T) {
	r := newReceiver(t, always(0)) // connections cut without an answer
	q := testQueue(t, r.URL, 3)
	run(t, q)
	q.Offer(notice("1"))
	waitUntil(t, "the first notice in hand, failing", func() bool { return testutil.ToFloat64(q.m.failures) >= 1 })
	for _, id := range []string{"2", "3", "4", "5", "6"} {
		q.Offer(notice(id))
	}
	if got := testutil.ToFloat64(q.m.full); got != 2 {
		t.Errorf("dropped QueueFull %v, want 2 (5 and 6)", got)
	}
	if got := testutil.ToFloat64(q.m.queued); got != 4 {
		t.Errorf("queued %v, want 4 (3 waiting and 1 in hand)", got)
	}
	r.setAnswer(always(http.StatusAccepted))
	waitUntil(t, "four notices taken", func() bool { return len(r.taken()) == 4 })
	if got := r.taken(); !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Errorf("taken %v, want 1 2 3 4 in order", got)
	}
}

// What is still queued when the manager stops, and what is offered after, is counted as Stopped.
func TestNoticesLeftAtTheStopAreCountedStopped(t *testing.T) {
	r := newReceiver(t, always(http.StatusBadGateway))
	q := testQueue(t, r.URL, 3)
	stop := run(t, q)
	for _, id := range []string{"1", "2", "3"} {
		q.Offer(notice(id))
	}
	waitUntil(t, "the first notice failing", func() bool { return testutil.ToFloat64(q.m.failures) >= 1 })
	stop()
	q.Offer(notice("4"))
	if got := testutil.ToFloat64(q.m.stoppedDropped); got != 4 {
		t.Errorf("dropped Stopped %v, want 4 (%s)", got, count(q))
	}
	if got := testutil.ToFloat64(q.m.queued); got != 0 {
		t.Errorf("queued %v after the stop, want 0", got)
	}
}

// Each class of answer: taken, tried again, or refused for good (dropped, counted, never tried
// again). Redirects are not followed.
func TestAnswersOfAReceiver(t *testing.T) {
	cases := []struct {
		status   int
		location string
		want     string // taken, again, refused
	}{
		{status: http.StatusOK, want: "taken"},
		{status: http.StatusAccepted, want: "taken"},
		{status: http.StatusRequestTimeout, want: "again"},
		{status: http.StatusTooManyRequests, want: "again"},
		{status: http.StatusInternalServerError, want: "again"},
		{status: http.StatusServiceUnavailable, want: "again"},
		{status: http.StatusBadRequest, want: "refused"},
		{status: http.StatusUnauthorized, want: "refused"},
		{status: http.StatusNotFound, want: "refused"},
		// A redirect to a path that takes it: followed, it would be taken.
		{status: http.StatusFound, location: "/took", want: "refused"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.URL.Path == "/took" {
					return
				}
				if tc.location != "" {
					w.Header().Set("Location", tc.location)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			w, err := NewWebhook(srv.URL, nil, http.DefaultTransport)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Send(context.Background(), notice("1"))
			got := "again"
			var refused *RefusedError
			switch {
			case err == nil:
				got = "taken"
			case errorsAs(err, &refused):
				got = "refused"
			}
			if got != tc.want {
				t.Errorf("%d: %s (%v), want %s", tc.status, got, err, tc.want)
			}
		})
	}
}

// A receiver that refuses a notice is not asked again, and the notice is counted Refused.
func TestARefusedNoticeIsDroppedAndCounted(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusForbidden
		}
		return http.StatusOK
	})
	q := testQueue(t, r.URL, 10)
	run(t, q)
	q.Offer(notice("refused"))
	q.Offer(notice("taken"))
	waitUntil(t, "the second notice taken", func() bool { return len(r.taken()) == 1 })
	if got := r.got(); !slices.Equal(got, []string{"refused", "taken"}) {
		t.Errorf("requests %v, want each notice once", got)
	}
	if got := testutil.ToFloat64(q.m.refused); got != 1 {
		t.Errorf("dropped Refused %v, want 1", got)
	}
}
