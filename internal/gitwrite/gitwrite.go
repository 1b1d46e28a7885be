// Package gitwrite commits file edits to a branch of a Git repository and pushes them, with go-git:
// a shallow clone of the branch into memory, the edits, one commit if anything changed, and a push
// that only moves the branch from the commit the edits were made on. Someone else who pushed in
// between is not overwritten: the edits are made again on the new head and pushed again. With a push
// branch, the commits go there instead, for a pull request.
package gitwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Remote is a branch of a repository and the credentials to write it.
type Remote struct {
	URL    string
	Branch string
	// PushBranch, when set, gets the commits instead of Branch: they are made on it once it
	// exists, on Branch before that (a branch for a pull request).
	PushBranch string
	Auth       transport.AuthMethod // nil: none
}

// target is the branch the commits are pushed to.
func (r Remote) target() string {
	if r.PushBranch != "" {
		return r.PushBranch
	}
	return r.Branch
}

// Change is the edits of one party (one config): made all together, or, when one fails, not at
// all.
type Change []Edit

// Edit changes one file: Change gets its content (nil when there is no such file) and the worktree
// as the edits before it left it (to read other files: a file made from many), and returns the
// content the file must have. Returning the same bytes changes nothing. Edits are made again on a
// newer head when the branch moved before the push, so Change must depend on what it reads alone.
type Edit struct {
	Path   string
	Change func(old []byte, worktree billy.Filesystem) ([]byte, error)
}

// Commit is who commits, when, and what the commit says.
type Commit struct {
	Name, Email string
	When        time.Time
	// Message is the commit's message, given which changes changed a file (changed[i] for
	// changes[i]): made again on a newer head, a change may find its edits there already.
	Message func(changed []bool) string
	// SignKey signs the commit (OpenPGP), with its private key decrypted; nil: unsigned.
	SignKey *openpgp.Entity
}

// Says is a Message that is msg whatever changed.
func Says(msg string) func([]bool) string { return func([]bool) string { return msg } }

// Result is what a write did.
type Result struct {
	// Hash is the commit pushed; zero when no edit changed anything.
	Hash plumbing.Hash
	// Changed are the paths the commit changes.
	Changed []string
	// Errors has, for each change, the error that left its files as they were (nil: made).
	Errors []error
	// Pushes counts push attempts: more than one when the branch moved in between.
	Pushes int
}

// MaxPushes bounds the attempts when the branch keeps moving under the writer.
const MaxPushes = 5

// ErrBranchMoving: the branch moved before each of MaxPushes pushes.
var ErrBranchMoving = errors.New("the branch moved before each push")

// Write makes the changes on the branch's head and pushes them as one commit. A change that fails is
// left out (its error is in the result), the others are committed.
func Write(ctx context.Context, r Remote, c Commit, changes []Change) (Result, error) {
	var res Result
	r, err := r.pinned(ctx)
	if err != nil {
		return res, err
	}
	target := r.target()
	for res.Pushes < MaxPushes {
		from := r.Branch
		if target != r.Branch {
			heads, err := remoteHeads(ctx, r)
			if err != nil {
				return res, fmt.Errorf("list the branches of %s: %w", r.URL, err)
			}
			if _, ok := heads[target]; ok {
				from = target
			}
		}
		repo, head, err := clone(ctx, r, from)
		if err != nil {
			return res, err
		}
		hash, changed, errs, err := commit(repo, head, c, changes)
		res.Changed, res.Errors = changed, errs
		if err != nil || hash.IsZero() {
			return res, err
		}
		res.Pushes++
		err = repo.PushContext(ctx, &git.PushOptions{
			RemoteName: git.DefaultRemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec(hash.String() + ":" + plumbing.NewBranchReferenceName(target).String())},
			Auth:       r.Auth,
		})
		if err == nil {
			res.Hash = hash
			return res, nil
		}
		// Retry only when the target is no longer where the edits were made (or, for a push
		// branch made from the branch, someone made it meanwhile): anything else (refused
		// credentials, an unreachable server, a protected branch) would fail again.
		heads, lsErr := remoteHeads(ctx, r)
		now, exists := heads[target]
		if lsErr != nil || (from == target && now == head) || (from != target && !exists) {
			return res, fmt.Errorf("push: %w", err)
		}
	}
	return res, ErrBranchMoving
}

// clone fetches the head of branch alone, into memory.
func clone(ctx context.Context, r Remote, branch string) (*git.Repository, plumbing.Hash, error) {
	repo, err := git.CloneContext(ctx, memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL:           r.URL,
		Auth:          r.Auth,
		ReferenceName: plumbing.NewBranchReferenceName(branch),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
	})
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("clone %s branch %s: %w", r.URL, branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	return repo, head.Hash(), nil
}

// remoteHeads is where each branch is on the remote now, by branch name.
func remoteHeads(ctx context.Context, r Remote) (map[string]plumbing.Hash, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{r.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: r.Auth})
	if err != nil {
		return nil, err
	}
	heads := map[string]plumbing.Hash{}
	for _, ref := range refs {
		if ref.Name().IsBranch() {
			heads[ref.Name().Short()] = ref.Hash()
		}
	}
	return heads, nil
}

// commit makes the changes in the worktree and commits what differs from head.
func commit(repo *git.Repository, head plumbing.Hash, c Commit, changes []Change) (plumbing.Hash, []string, []error, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	errs := make([]error, len(changes))
	made := make([]bool, len(changes))
	touched := map[string]bool{}
	for i, ch := range changes {
		made[i], errs[i] = applyAll(wt.Filesystem, ch, touched)
	}
	// Only the paths written are looked at: a worktree's status hashes every file of the
	// repository, and a status per added path made a write of many configs in a large repository
	// grow as the product of the two.
	base, err := headTree(repo, head)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	var changed []string
	for _, p := range slices.Sorted(maps.Keys(touched)) {
		same, err := unchanged(wt.Filesystem, base, p)
		if err != nil {
			return plumbing.ZeroHash, nil, nil, err
		}
		if same { // undone by a later change
			continue
		}
		if err := wt.AddWithOptions(&git.AddOptions{Path: p, SkipStatus: true}); err != nil {
			return plumbing.ZeroHash, nil, nil, err
		}
		changed = append(changed, p)
	}
	if len(changed) == 0 { // nothing to say, or every change undone by a later one
		return plumbing.ZeroHash, nil, errs, nil
	}
	sig := &object.Signature{Name: c.Name, Email: c.Email, When: c.When}
	hash, err := wt.Commit(c.Message(made), &git.CommitOptions{Author: sig, Committer: sig, Parents: []plumbing.Hash{head}, SignKey: c.SignKey})
	return hash, changed, errs, err
}

// headTree is the tree of commit head.
func headTree(repo *git.Repository, head plumbing.Hash) (*object.Tree, error) {
	c, err := repo.CommitObject(head)
	if err != nil {
		return nil, err
	}
	return c.Tree()
}

// unchanged: the file at p in the worktree has the content it has in tree (neither has it counts
// as the same).
func unchanged(fs billy.Filesystem, tree *object.Tree, p string) (bool, error) {
	now, err := util.ReadFile(fs, p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	f, err := tree.File(p)
	if errors.Is(err, object.ErrFileNotFound) {
		return now == nil, nil
	}
	if err != nil {
		return false, err
	}
	if now == nil {
		return false, nil
	}
	return plumbing.ComputeHash(plumbing.BlobObject, now) == f.Hash, nil
}

// applyAll makes the edits of a change, or, when one of them fails, none: the files it wrote get
// back what they had. It reports whether the change wrote a file; touched gains the paths it wrote.
func applyAll(fs billy.Filesystem, ch Change, touched map[string]bool) (bool, error) {
	type saved struct {
		path    string
		content []byte // nil: there was no file
	}
	var undo []saved
	fail := func(path string, err error) (bool, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			if undo[i].content == nil {
				_ = fs.Remove(undo[i].path)
			} else {
				_ = util.WriteFile(fs, undo[i].path, undo[i].content, 0o644)
			}
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	for _, e := range ch {
		old, err := util.ReadFile(fs, e.Path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(e.Path, err)
		}
		content, err := e.Change(old, fs)
		if err != nil {
			return fail(e.Path, err)
		}
		if bytes.Equal(content, old) { // also: no file, and nothing to write
			continue
		}
		undo = append(undo, saved{e.Path, old})
		if err := util.WriteFile(fs, e.Path, content, 0o644); err != nil {
			return fail(e.Path, err)
		}
	}
	for _, u := range undo {
		touched[u.path] = true
	}
	return len(undo) > 0, nil
}

// ReadSigningKey reads an armored OpenPGP private key (the first entity of the key ring) and
// decrypts it, and its subkeys, with passphrase when they are encrypted. Its errors never hold the
// key or the passphrase.
func ReadSigningKey(armored, passphrase []byte) (*openpgp.Entity, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, errors.New("not an armored OpenPGP key ring")
	}
	e := ring[0]
	if e.PrivateKey == nil {
		return nil, errors.New("the key ring holds no private key")
	}
	keys := []*packet.PrivateKey{e.PrivateKey}
	for _, sub := range e.Subkeys {
		if sub.PrivateKey != nil {
			keys = append(keys, sub.PrivateKey)
		}
	}
	for _, k := range keys {
		if !k.Encrypted {
			continue
		}
		if len(passphrase) == 0 {
			return nil, errors.New("the private key is encrypted and no passphrase is given")
		}
		if err := k.Decrypt(passphrase); err != nil {
			return nil, errors.New("the passphrase does not decrypt the private key")
		}
	}
	return e, nil
}
