package gitwrite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// resolveSSH is the address an ssh:// remote's host is dialled at; UseResolver sets it (nil: the
// host is dialled by its name).
var resolveSSH func(ctx context.Context, host string) (netip.Addr, error)

// UseResolver makes every ssh:// remote of this process dialled at the address resolve gives for its
// host: the manager's address policy (--git-allow), which go-git's SSH dialler cannot be given. The
// host key is still checked against the host's name.
func UseResolver(resolve func(ctx context.Context, host string) (netip.Addr, error)) {
	resolveSSH = resolve
}

// SSHAuth is the credentials of an ssh:// remote: user, a private key (PEM or OpenSSH, with its
// passphrase when it is encrypted) and the known_hosts lines that must list the host's key. Its
// errors never hold the key or the passphrase.
func SSHAuth(user string, identity, passphrase, knownHosts []byte) (transport.AuthMethod, error) {
	signer, err := ssh.ParsePrivateKey(identity)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing) && len(passphrase) == 0:
		return nil, errors.New("the private key is encrypted and no passphrase is given")
	case errors.As(err, &missing):
		if signer, err = ssh.ParsePrivateKeyWithPassphrase(identity, passphrase); err != nil {
			return nil, errors.New("the passphrase does not decrypt the private key")
		}
	case err != nil:
		return nil, errors.New("not a private key in PEM or OpenSSH form")
	}
	if len(knownHosts) == 0 {
		return nil, errors.New("no known_hosts: the host's key could not be checked")
	}
	// The known_hosts parser reads files alone.
	f, err := os.CreateTemp("", "known_hosts-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(knownHosts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	db, err := gitssh.NewKnownHostsDb(f.Name())
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	return &sshAuth{PublicKeys: gitssh.PublicKeys{User: user, Signer: signer}, db: db}, nil
}

// sshAuth is go-git's PublicKeys with known_hosts checked for the host as the URL names it, while
// the connection goes to the address it was resolved to.
type sshAuth struct {
	gitssh.PublicKeys
	db interface {
		HostKeyCallback() ssh.HostKeyCallback
		HostKeyAlgorithms(hostWithPort string) []string
	}
	hostWithPort string // as the URL names it; set by pinned
}

func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	check := a.db.HostKeyCallback()
	a.HostKeyCallback = func(_ string, remote net.Addr, key ssh.PublicKey) error { return check(a.hostWithPort, remote, key) }
	a.HostKeyAlgorithms = a.db.HostKeyAlgorithms(a.hostWithPort)
	cfg, err := a.PublicKeys.ClientConfig()
	if err == nil {
		cfg.Timeout = sshHandshakeTimeout // go-git's dial takes no context
	}
	return cfg, err
}

// sshHandshakeTimeout bounds the connection and the SSH handshake.
const sshHandshakeTimeout = 30 * time.Second

// pinned is r with an ssh:// URL's host resolved once, within the address policy, and dialled at
// that address; other remotes are r.
func (r Remote) pinned(ctx context.Context) (Remote, error) {
	u, err := url.Parse(r.URL)
	if err != nil || u.Scheme != "ssh" {
		return r, nil // an URL go-git cannot read says so itself
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "22"
	}
	if resolveSSH != nil {
		addr, err := resolveSSH(ctx, host)
		if err != nil {
			return r, fmt.Errorf("%s: %w", host, err)
		}
		u.Host = net.JoinHostPort(addr.String(), port)
		r.URL = u.String()
	}
	if a, ok := r.Auth.(*sshAuth); ok {
		named := *a
		named.hostWithPort = net.JoinHostPort(host, port)
		r.Auth = &named
	}
	return r, nil
}
