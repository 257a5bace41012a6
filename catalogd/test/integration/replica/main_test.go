// Package replica runs two catalogd replicas in one test process against a real kube-apiserver and
// etcd (envtest): each is a manager with catalogd's wiring (the leader-elected Catalog reconciler,
// the replica Syncer on every replica, the "catalogs" readiness check), its own store and source
// cache, its own content handler and health probe endpoint; both compete for one leader Lease. A front on 127.0.0.1 plays
// the Service: it sends each request to a Ready replica, in turn. Catalog images are built in Go and
// served by an in-process registry on 127.0.0.1.
// Run it with `make test-integration` (KUBEBUILDER_ASSETS must name the binaries; it fails if unset).
package replica

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/controller"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/platform/apiservertest"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

const namespace = "olmv1-system"

var env struct {
	config *rest.Config
	client client.Client
}

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "catalogd replica integration tests", apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{catalogdv1alpha1.AddToScheme},
		QPS:         500,
		Burst:       1000,
	}, func(s *apiservertest.Suite) error {
		env.config, env.client = s.Config, s.Client
		if err := s.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", namespace, err)
		}
		return nil
	}))
}

// proc is one catalogd replica: a manager wired as catalogd's main.go wires it.
type proc struct {
	name    string
	mgr     ctrl.Manager
	store   *storage.Store
	handler http.Handler
	// probes is the address of the manager's health probe endpoint (/healthz, /readyz).
	probes string

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startReplica starts a replica named name (also its user agent, hence its field manager) whose
// store and source cache live under dir, competing for the Lease lease.
func startReplica(t *testing.T, name, dir, lease string) *proc {
	t.Helper()
	cfg := rest.CopyConfig(env.config)
	cfg.UserAgent = name
	probes := freeAddress(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        env.client.Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        probes,
		LeaderElection:                true,
		LeaderElectionID:              lease,
		LeaderElectionNamespace:       namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(4 * time.Second),
		RenewDeadline:                 ptr.To(3 * time.Second),
		RetryPeriod:                   ptr.To(200 * time.Millisecond),
		// Two managers in one process register the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.New(filepath.Join(dir, "storage"))
	if err != nil {
		t.Fatal(err)
	}
	// A short timeout, so that an attempt against a hanging registry fails and is retried soon.
	unpacker, err := source.New(source.Config{CacheDir: filepath.Join(dir, "cache"), Client: mgr.GetAPIReader(), Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	loader := replica.NewLoader(unpacker, store, namespace)
	p := &proc{name: name, mgr: mgr, store: store, handler: &serve.Handler{Store: store}, probes: probes, done: make(chan error, 1)}
	syncer := &replica.Syncer{Loader: loader}
	if err := syncer.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := mgr.AddReadyzCheck("catalogs", syncer.ReadyCheck); err != nil {
		t.Fatal(err)
	}
	if err := (&controller.CatalogReconciler{
		Client: mgr.GetClient(), Loader: loader, ContentBaseURL: "https://catalogd.test",
		Recorder: mgr.GetEventRecorder("catalogd"),
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop stops the replica's manager (releasing the Lease if it holds it).
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.once.Do(func() {
		p.cancel()
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("replica %s: manager: %v", p.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("replica %s did not stop", p.name)
		}
	})
}

func (p *proc) elected() bool {
	select {
	case <-p.mgr.Elected():
		return true
	default:
		return false
	}
}

// ready asks the replica's /readyz, as kubelet's readiness probe does; when it is not ready, the
// error is the answer of /readyz/catalogs (the reason).
func (p *proc) ready() error {
	get := func(path string) (int, string, error) {
		resp, err := probeClient.Get("http://" + p.probes + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body)), err
	}
	code, _, err := get("/readyz")
	if err != nil {
		return err
	}
	if code == http.StatusOK {
		return nil
	}
	code, body, err := get("/readyz/catalogs")
	if err != nil {
		return err
	}
	return fmt.Errorf("/readyz/catalogs: %d %s", code, body)
}

var probeClient = &http.Client{Timeout: 5 * time.Second}

// freeAddress returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// front plays a Service in front of replicas: each request goes to the next Ready replica.
type front struct {
	mu       sync.Mutex
	replicas []*proc
	next     int
	served   map[string]int
}

func newFront(t *testing.T, replicas ...*proc) (*front, string) {
	f := &front{replicas: replicas, served: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	var ready []*proc
	for _, p := range f.replicas {
		if p.ready() == nil {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		f.mu.Unlock()
		http.Error(w, "no ready endpoints", http.StatusServiceUnavailable)
		return
	}
	p := ready[f.next%len(ready)]
	f.next++
	f.served[p.name]++
	f.mu.Unlock()
	p.handler.ServeHTTP(w, r)
}

// servedBy returns how many requests each replica answered since the last call.
func (f *front) servedBy() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.served
	f.served = map[string]int{}
	return out
}
