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
	r := &Registry{
		Addr:        l.Addr().String(),
		ClusterAddr: l.Addr().String(),
		server:      &http.Server{Handler: registry.New(registry.Logger(log.New(logw, "registry: ", log.LstdFlags))), ReadHeaderTimeout: 10 * time.Second},
		done:        make(chan error, 1),
	}
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
