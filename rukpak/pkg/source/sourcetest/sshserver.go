package sourcetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves git repositories over ssh on 127.0.0.1 (git-upload-pack only). It accepts one
// client key, generated for the test, and offers a generated host key.
type SSHServer struct {
	// Addr is the server's host:port.
	Addr string
	// ClientKeyPEM is the private key (OpenSSH PEM) clients must use: the ssh-privatekey of a Secret.
	ClientKeyPEM []byte
	// KnownHosts is a known_hosts line for this server's host key.
	KnownHosts []byte

	config *ssh.ServerConfig
	ln     net.Listener

	mu    sync.Mutex
	repos map[string]storer.Storer
}

// NewSSHServer starts an ssh git server that stops when the test ends.
func NewSSHServer(t testing.TB) *SSHServer {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := ssh.NewPublicKey(clientPub)
	if err != nil {
		t.Fatal(err)
	}
	s := &SSHServer{ClientKeyPEM: pem.EncodeToMemory(block), repos: map[string]storer.Storer{}}
	s.config = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), allowed.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown public key")
		},
	}
	s.config.AddHostKey(hostSigner)
	if s.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	s.Addr = s.ln.Addr().String()
	s.KnownHosts = []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, hostSigner.PublicKey()) + "\n")
	go s.accept()
	t.Cleanup(func() { _ = s.ln.Close() })
	return s
}

// Add serves repo at /<name>.git and returns its ssh:// URL.
func (s *SSHServer) Add(name string, repo *Repo) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos["/"+name+".git"] = repo.Storer
	return fmt.Sprintf("ssh://git@%s/%s.git", s.Addr, name)
}

func (s *SSHServer) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(conn)
	}
}

func (s *SSHServer) handle(conn net.Conn) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, s.config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go s.session(ch, chReqs)
	}
}

func (s *SSHServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			continue
		}
		_ = req.Reply(true, nil)
		status := s.uploadPack(ch, payload.Command)
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		_ = ch.Close()
		return
	}
}

// uploadPack runs "git-upload-pack '<path>'" on the channel and returns the exit status.
func (s *SSHServer) uploadPack(ch ssh.Channel, command string) uint32 {
	path, ok := strings.CutPrefix(command, transport.UploadPackServiceName+" ")
	if !ok {
		fmt.Fprintf(ch.Stderr(), "only %s is served\n", transport.UploadPackServiceName)
		return 1
	}
	path = strings.Trim(path, "'")
	s.mu.Lock()
	st, ok := s.repos[path]
	s.mu.Unlock()
	if !ok {
		fmt.Fprintf(ch.Stderr(), "fatal: '%s' does not appear to be a git repository\n", path)
		return 128
	}
	ep, err := transport.NewEndpoint("ssh://" + s.Addr + path)
	if err != nil {
		return 1
	}
	sess, err := server.NewServer(storerLoader{st}).NewUploadPackSession(ep, nil)
	if err != nil {
		return 1
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferences()
	if err != nil || ar.Encode(ch) != nil {
		return 1
	}
	req := packp.NewUploadPackRequest()
	if err := req.Decode(ch); err != nil {
		return 0 // the client only listed the references
	}
	sc := pktline.NewScanner(ch)
	for sc.Scan() {
		line := strings.TrimSpace(string(sc.Bytes()))
		if line == "done" {
			break
		}
		if h, ok := strings.CutPrefix(line, "have "); ok {
			req.Haves = append(req.Haves, plumbing.NewHash(h))
		}
	}
	resp, err := sess.UploadPack(context.Background(), req)
	if err != nil {
		fmt.Fprintln(ch.Stderr(), err)
		return 1
	}
	if err := resp.Encode(ch); err != nil && !errors.Is(err, io.EOF) {
		return 1
	}
	return 0
}
