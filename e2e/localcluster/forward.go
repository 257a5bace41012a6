package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
)

// Forwarder accepts TCP connections on 127.0.0.1 in the host's network namespace and joins each one to
// a connection made inside a Netns: host-side tests and kubectl reach a real-node cluster's API server
// and registry this way, while every address of the cluster stays inside its namespace.
type Forwarder struct {
	// Addr is the loopback address it listens on.
	Addr string
	l    net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
	done bool
}

// Forward listens on a free port of 127.0.0.1 and forwards every connection to target inside ns.
func Forward(ns *Netns, target string) (*Forwarder, error) {
	return ForwardFrom("127.0.0.1:0", ns, target)
}

// ForwardFrom is Forward listening on listen, which must be a loopback address.
func ForwardFrom(listen string, ns *Netns, target string) (*Forwarder, error) {
	if host, _, err := net.SplitHostPort(listen); err != nil || !net.ParseIP(host).IsLoopback() {
		return nil, fmt.Errorf("forwarder address %q: the forwarder listens on loopback only (127.0.0.1:PORT)", listen)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	return serveForward(l, func(ctx context.Context) (net.Conn, error) { return ns.Dial(ctx, "tcp", target) }), nil
}

// ForwardOutOf listens on listen inside ns and forwards every connection to target, a loopback
// address of the host's own network namespace: a cluster's processes (a kind node's kube-apiserver
// calling an aggregated API) reach a harness's host process this way, while the host still dials only
// loopback.
func ForwardOutOf(ns *Netns, listen, target string) (*Forwarder, error) {
	if host, _, err := net.SplitHostPort(target); err != nil || !net.ParseIP(host).IsLoopback() {
		return nil, fmt.Errorf("forwarder target %q: the host side is dialed on loopback only (127.0.0.1:PORT)", target)
	}
	l, err := ns.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s in network namespace %s: %w", listen, ns.Name, err)
	}
	var d net.Dialer
	return serveForward(l, func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", target) }), nil
}

// serveForward accepts on l and joins every connection to one that dial makes.
func serveForward(l net.Listener, dial func(context.Context) (net.Conn, error)) *Forwarder {
	f := &Forwarder{Addr: l.Addr().String(), l: l, open: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.join(c, dial)
			}()
		}
	}()
	return f
}

func (f *Forwarder) join(c net.Conn, dial func(context.Context) (net.Conn, error)) {
	if !f.track(c) {
		c.Close()
		return
	}
	defer f.untrack(c)
	up, err := dial(context.Background())
	if err != nil {
		return
	}
	if !f.track(up) {
		up.Close()
		return
	}
	defer f.untrack(up)
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
}

func (f *Forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return false
	}
	f.open[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.open, c)
	f.mu.Unlock()
	c.Close()
}

// Wait blocks until the forwarder is closed.
func (f *Forwarder) Wait() { f.wg.Wait() }

// Close stops listening and closes every forwarded connection.
func (f *Forwarder) Close() error {
	err := f.l.Close()
	f.mu.Lock()
	f.done = true
	for c := range f.open {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}
