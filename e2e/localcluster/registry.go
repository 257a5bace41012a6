package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI registry (go-containerregistry's, content in memory) listening on 127.0.0.1.
type Registry struct {
	// Addr is host:port, e.g. 127.0.0.1:39125; image references are Addr + "/repo:tag".
	Addr string
	// ClusterAddr is where a real-node cluster's pods and containerd reach the same registry (see
	// ServeIn); image references that the cluster pulls name it. It equals Addr otherwise.
	ClusterAddr string
	server      *http.Server
	done        chan error
	// standIn, when set, is served under standInPrefix (ServeStandIn).
	standIn atomic.Pointer[standIn]
}

// StartRegistry serves a registry on addr (use "127.0.0.1:0" for a free port). Requests are logged to
// logw when it is not nil.
func StartRegistry(addr string, logw io.Writer) (*Registry, error) {
	if logw == nil {
		logw = io.Discard
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("registry address %q: the local registry only listens on loopback (use 127.0.0.1:PORT)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Registry{Addr: l.Addr().String(), ClusterAddr: l.Addr().String(), done: make(chan error, 1)}
	reg := registry.New(registry.Logger(log.New(logw, "registry: ", log.LstdFlags)))
	r.server = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if s := r.standIn.Load(); s != nil && strings.HasPrefix(req.URL.Path, standInPrefix) {
			s.ServeHTTP(w, req)
			return
		}
		reg.ServeHTTP(w, req)
	})}
	go func() { r.done <- r.server.Serve(l) }()
	return r, nil
}

// ServeIn also serves the registry inside a real-node cluster's network namespace, on the node's
// address and RealNodeRegistryPort, and sets ClusterAddr to that address. The host never dials it.
func (r *Registry) ServeIn(ns *Netns) error {
	addr := net.JoinHostPort(ns.NodeIP, strconv.Itoa(RealNodeRegistryPort))
	l, err := ns.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serving the registry in network namespace %s: %w", ns.Name, err)
	}
	r.ClusterAddr = addr
	go func() { _ = r.server.Serve(l) }()
	return nil
}

// Stop shuts the registry down.
func (r *Registry) Stop(ctx context.Context) error {
	err := r.server.Shutdown(ctx)
	<-r.done
	return err
}

// Wait blocks until the registry stops serving.
func (r *Registry) Wait() error {
	err := <-r.done
	r.done <- err
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
