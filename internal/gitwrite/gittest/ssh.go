package gittest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// SSH serves the server's repositories over SSH as well, as a Git host does: the real
// git-upload-pack and git-receive-pack, run for a client that holds the identity it returns. URL is
// ssh://git@127.0.0.1:<port>, to which /<name>.git is added; KnownHosts is the known_hosts line of
// the server's host key.
type SSH struct {
	URL         string
	Identity    []byte // the client's private key, PEM
	KnownHosts  string
	HostAddress string // 127.0.0.1:<port>
}

// ServeSSH starts the SSH server of s; the test's end stops it.
func (s *Server) ServeSSH(t testing.TB) *SSH {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	authorized, err := ssh.NewPublicKey(clientPub)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) != string(authorized.Marshal()) {
			return nil, errors.New("unknown key")
		}
		return nil, nil
	}}
	cfg.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go s.serveSSH(conn, cfg)
		}
	}()
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	return &SSH{URL: "ssh://git@127.0.0.1:" + port, Identity: pem.EncodeToMemory(block), HostAddress: addr,
		KnownHosts: fmt.Sprintf("[127.0.0.1]:%s %s", port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostKey.PublicKey()))))}
}

func (s *Server) serveSSH(conn net.Conn, cfg *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		conn.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			continue
		}
		go s.serveSession(ch, requests)
	}
}

// serveSession runs the one command Git asks for, git-upload-pack '/<name>.git' or
// git-receive-pack '/<name>.git', in the server's root.
func (s *Server) serveSession(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		if req.Type != "exec" || len(req.Payload) < 4 {
			_ = req.Reply(false, nil)
			continue
		}
		command := string(req.Payload[4 : 4+binary.BigEndian.Uint32(req.Payload)])
		program, repo, ok := strings.Cut(command, " ")
		repo = strings.Trim(repo, "'")
		if !ok || (program != "git-upload-pack" && program != "git-receive-pack") || strings.Contains(repo, "..") {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		s.Requests.Add(1)
		if program == "git-receive-pack" {
			s.Pushes.Add(1)
		}
		cmd := exec.Command(program, filepath.Join(s.Root, filepath.Clean("/"+repo)))
		cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
		// A pipe of our own: Wait would wait for a copy from ch, which the client keeps open.
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return
		}
		go func() { _, _ = io.Copy(stdin, ch); stdin.Close() }()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
			_, _ = io.WriteString(ch.Stderr(), err.Error())
		}
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
		return
	}
}
