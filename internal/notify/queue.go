package notify

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Sender delivers one notice to a receiver, within ctx. An error that is a *RefusedError is final;
// any other is tried again.
type Sender interface {
	Send(ctx context.Context, n Notice) error
}

// RefusedError: the receiver refused the notice for good; trying again would not change its mind.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return e.Why }

// Defaults of a queue.
const (
	DefaultQueueSize = 1000
	// DefaultTry bounds one try: a receiver that accepts the connection and never answers holds
	// the queue this long.
	DefaultTry = 10 * time.Second
	// DefaultFlush bounds the sending of what is queued when the manager stops.
	DefaultFlush = 5 * time.Second
)

// DefaultBackoff is the wait before each new try of a notice: 1s, doubling, up to 5 minutes, and
// every 5 minutes from then on, for as long as it takes: within the queue's bound nothing is lost
// to an outage, however long.
var DefaultBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 5 * time.Minute, Steps: math.MaxInt32}

var log = logf.Log.WithName("notify")

// Queue holds the notices for one receiver and sends them one at a time, in the order they were
// recorded. When it is full, a new notice is dropped (and counted): the queue's size bounds what a
// receiver that is down costs, each notice being bounded by its event's message.
type Queue struct {
	sink    string
	sender  Sender
	try     time.Duration
	flush   time.Duration
	backoff wait.Backoff
	m       sinkMetrics

	mu      sync.RWMutex
	stopped bool
	notices chan Notice
	// dropping: the queue is full and drops what is offered, logged once until it takes one again
	// (the counter counts each).
	dropping atomic.Bool
}

// NewQueue is a queue of size notices for sender, counted under the sink's name.
func NewQueue(sink string, sender Sender, size int) *Queue {
	return &Queue{sink: sink, sender: sender, try: DefaultTry, flush: DefaultFlush, backoff: DefaultBackoff,
		m: metricsOf(sink), notices: make(chan Notice, size)}
}

// Offer queues n; it never blocks.
func (q *Queue) Offer(n Notice) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.stopped {
		q.m.stoppedDropped.Inc()
		return
	}
	q.m.queued.Inc() // before the sender may take it up and count it out
	select {
	case q.notices <- n:
		q.dropping.Store(false)
	default:
		q.m.queued.Dec()
		q.m.full.Inc()
		if q.dropping.CompareAndSwap(false, true) {
			log.Info("notification queue full: dropping notifications until the receiver takes them again",
				"sink", q.sink, "first", n.Object.Namespace+"/"+n.Object.Name, "reason", n.Reason)
		}
	}
}

// Start sends the queued notices until ctx is done (a manager.Runnable), then what is still queued
// for at most the flush time; what is left then is counted as dropped, Stopped.
func (q *Queue) Start(ctx context.Context) error {
	sendCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Until the queue is closed and empty.
		for n := range q.notices {
			q.deliver(sendCtx, n)
			q.m.queued.Dec()
		}
	}()
	<-ctx.Done()
	q.mu.Lock()
	q.stopped = true
	close(q.notices)
	q.mu.Unlock()
	stop := time.AfterFunc(q.flush, cancel)
	defer stop.Stop()
	<-done
	return nil
}

// NeedLeaderElection: the queues run wherever events are recorded.
func (q *Queue) NeedLeaderElection() bool { return false }

// deliver sends n until the receiver takes or refuses it, or ctx ends.
func (q *Queue) deliver(ctx context.Context, n Notice) {
	backoff := q.backoff
	for try := 1; ; try++ {
		if ctx.Err() != nil {
			q.m.stoppedDropped.Inc()
			return
		}
		tryCtx, cancel := context.WithTimeout(ctx, q.try)
		err := q.sender.Send(tryCtx, n)
		cancel()
		var refused *RefusedError
		switch {
		case err == nil:
			q.m.sent.Inc()
			return
		case errors.As(err, &refused):
			q.m.refused.Inc()
			log.Error(err, "notification refused, dropped", "sink", q.sink, "id", n.ID, "reason", n.Reason)
			return
		case ctx.Err() != nil:
			q.m.stoppedDropped.Inc() // cut off by the stop, not failed
			return
		}
		q.m.failures.Inc()
		wait := backoff.Step()
		log.Info("notification not sent, trying again", "sink", q.sink, "id", n.ID, "try", try, "in", wait.Round(time.Millisecond), "error", err.Error())
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}
