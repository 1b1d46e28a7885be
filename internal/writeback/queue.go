package writeback

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/rollgate/rollgate/internal/gitwrite"
)

// Request asks for one config's outcomes to be in Git.
type Request struct {
	Config  types.NamespacedName
	Desired Desired
	// Repository is the GitWriteBack the config names; Remote its branch and credentials.
	Repository types.NamespacedName
	Remote     gitwrite.Remote
	Author     gitwrite.Commit // name and email
	// Outcome is what the commit message says of this config, through Template (the
	// GitWriteBack's message template, parsed by ParseMessageTemplate).
	Outcome  Outcome
	Template *template.Template
	// Secrets are the credentials' values, taken out of every error a result holds.
	Secrets []string
}

// Result is how the last write of a config's request went.
type Result struct {
	Digest string
	// Commit is the commit that changed the config's files; "" when they already said it all.
	Commit string
	Err    error
	// Adopted is what the record in Git held and the status did not (Desired.Adopt): the status
	// must learn it.
	Adopted Adopted
	// Retrying: the repository failed the write as a whole (unreachable, credentials refused), and
	// the queue tries again after its backoff; other errors are the config's files', which a person
	// must mend.
	Retrying bool
	At       time.Time
}

// Queue writes the requests of many configs: one writer per repository, which takes every request
// that arrived while it was writing into its next commit (so configs finishing together share a
// commit, and a commit never waits for a timer), and after a failure waits with a backoff before it
// tries again. It keeps no state that the configs cannot give again: a lost request is asked again
// by its config, whose status says what was written; what is already in Git makes no commit.
type Queue struct {
	// Write commits edits; gitwrite.Write.
	Write func(context.Context, gitwrite.Remote, gitwrite.Commit, []gitwrite.Change) (gitwrite.Result, error)
	Clock clock.Clock
	// Wake is told each config whose result is in.
	Wake func(types.NamespacedName)

	mu      sync.Mutex
	ctx     context.Context // the manager's, once started
	repos   map[repoKey]*repoQueue
	results map[types.NamespacedName]Result
	// live is the writer of each config's last request; a config forgotten, or moved to another
	// repository, is neither written again by the old writer nor given its results.
	live map[types.NamespacedName]repoKey
	// writing bounds the writes under way at once, each a clone in memory, over all repositories.
	writing chan struct{}
}

const (
	// maxWrites is how many repositories are written at once.
	maxWrites = 4
	// writeTimeout ends a write whose server stops answering (go-git's SSH dial has no deadline
	// of its own), so that its repository's writer goes on.
	writeTimeout = 5 * time.Minute
)

// A writer per GitWriteBack and branch: credentials are a namespace's own, so two namespaces that
// write to one repository never share a commit.
type repoKey struct {
	repository  types.NamespacedName
	url, branch string
}

type repoQueue struct {
	pending  map[types.NamespacedName]Request
	signal   chan struct{}
	failures int
}

// Backoff after n failures in a row: 1 s, doubling, at most 5 minutes.
func Backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(time.Second<<min(n-1, 20), 5*time.Minute)
}

// Submit queues a request, in place of the config's earlier one if that is not written yet.
func (q *Queue) Submit(r Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.repos == nil {
		q.repos = map[repoKey]*repoQueue{}
		q.live = map[types.NamespacedName]repoKey{}
		q.writing = make(chan struct{}, maxWrites)
	}
	key := repoKey{r.Repository, r.Remote.URL, r.Remote.Branch}
	if old, ok := q.live[r.Config]; ok && old != key {
		delete(q.repos[old].pending, r.Config)
	}
	q.live[r.Config] = key
	rq := q.repos[key]
	if rq == nil {
		rq = &repoQueue{pending: map[types.NamespacedName]Request{}, signal: make(chan struct{}, 1)}
		q.repos[key] = rq
		if q.ctx != nil {
			go q.run(q.ctx, key, rq)
		}
	}
	rq.pending[r.Config] = r
	select {
	case rq.signal <- struct{}{}:
	default:
	}
}

// Result is the last result of a config's requests.
func (q *Queue) Result(config types.NamespacedName) (Result, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, ok := q.results[config]
	return r, ok
}

// Forget drops what the queue knows of a deleted config.
func (q *Queue) Forget(config types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.results, config)
	if key, ok := q.live[config]; ok {
		delete(q.repos[key].pending, config)
		delete(q.live, config)
	}
}

// Start runs the writers until ctx ends (a manager.Runnable).
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	q.ctx = ctx
	for key, rq := range q.repos {
		go q.run(ctx, key, rq)
	}
	q.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (q *Queue) run(ctx context.Context, key repoKey, rq *repoQueue) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rq.signal:
		}
		q.mu.Lock()
		wait := Backoff(rq.failures)
		q.mu.Unlock()
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-q.Clock.After(wait):
			}
		}
		q.mu.Lock()
		batch := slices.SortedFunc(maps.Values(rq.pending), func(a, b Request) int {
			return strings.Compare(a.Config.String(), b.Config.String())
		})
		clear(rq.pending)
		q.mu.Unlock()
		if len(batch) > 0 {
			q.write(ctx, key, rq, batch)
		}
	}
}

// batchCommit is the commit of a batch: a change per config (its files all together or not at
// all), then a change per preset, made from the records as the configs' changes left them.
type batchCommit struct {
	changes []gitwrite.Change
	adopted []Adopted // what each config's change found in its files, by its place in the batch
	presets []string  // the paths of the presets, in the order of their changes
	commit  gitwrite.Commit
	secrets []string // what no error may show
}

// commitOf makes the commit of a batch, with the author and message of its newest request.
func (q *Queue) commitOf(batch []Request) batchCommit {
	c := batchCommit{changes: make([]gitwrite.Change, 0, len(batch)+1), adopted: make([]Adopted, len(batch))}
	presets := map[string]string{} // preset path: record directory
	for i, r := range batch {
		c.changes = append(c.changes, r.Desired.Edits(&c.adopted[i]))
		if r.Desired.PresetPath != "" {
			presets[r.Desired.PresetPath] = r.Desired.RecordDir
		}
		c.secrets = append(c.secrets, r.Secrets...)
	}
	c.presets = slices.Sorted(maps.Keys(presets))
	for _, p := range c.presets {
		c.changes = append(c.changes, gitwrite.Change{PresetEdit(presets[p], p)})
	}
	last := batch[len(batch)-1]
	c.commit = last.Author
	c.commit.When = q.Clock.Now()
	c.commit.Message = func(changed []bool) string { return message(last.Template, batch, changed) }
	return c
}

// write commits a batch and records each config's result.
func (q *Queue) write(ctx context.Context, key repoKey, rq *repoQueue, batch []Request) {
	c := q.commitOf(batch)
	select {
	case q.writing <- struct{}{}:
	case <-ctx.Done():
		return
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	res, err := q.Write(wctx, batch[len(batch)-1].Remote, c.commit, c.changes)
	cancel()
	<-q.writing
	q.record(key, rq, batch, c, res, err)
	for _, r := range batch {
		q.Wake(r.Config)
	}
}

// record keeps the result of a batch's write for each of its configs still queued for the
// repository; a failed repository has the batch tried again after its backoff.
func (q *Queue) record(key repoKey, rq *repoQueue, batch []Request, c batchCommit, res gitwrite.Result, err error) {
	presetErrs := map[string]error{}
	for i, p := range c.presets {
		if i+len(batch) < len(res.Errors) {
			presetErrs[p] = res.Errors[i+len(batch)]
		}
	}
	now := q.Clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.results == nil {
		q.results = map[types.NamespacedName]Result{}
	}
	if err != nil {
		rq.failures++
	} else {
		rq.failures = 0
	}
	for i, r := range batch {
		if q.live[r.Config] != key {
			continue // forgotten, or moved to another repository, while it was written
		}
		result := Result{Digest: r.Desired.Digest, At: now}
		var own error
		if i < len(res.Errors) {
			own = res.Errors[i]
		}
		switch {
		case err != nil:
			// The repository failed the whole batch: tried again after the backoff, unless the
			// config asked for something newer meanwhile.
			result.Err, result.Retrying = err, true
			if _, newer := rq.pending[r.Config]; !newer {
				rq.pending[r.Config] = r
			}
		case own != nil || presetErrs[r.Desired.PresetPath] != nil:
			// The files need a person; the config asks again later.
			result.Err = errors.Join(own, presetErrs[r.Desired.PresetPath])
		default:
			result.Adopted = c.adopted[i]
			if !res.Hash.IsZero() && (slices.Contains(res.Changed, r.Desired.Path) || slices.Contains(res.Changed, r.Desired.RecordPath)) {
				result.Commit = res.Hash.String()
			}
		}
		result.Err = redact(result.Err, c.secrets)
		q.results[r.Config] = result
	}
	if err != nil {
		select {
		case rq.signal <- struct{}{}:
		default:
		}
	}
}

// redact takes the secrets out of err's message: whatever a Git server or library puts in an error,
// the config's status and events never show the credentials.
func redact(err error, secrets []string) error {
	if err == nil {
		return err
	}
	msg := err.Error()
	for _, s := range secrets {
		if len(s) >= 4 { // shorter values would blank out ordinary words
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}
