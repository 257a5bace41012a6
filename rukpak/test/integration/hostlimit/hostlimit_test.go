// Package hostlimit runs rukpak's BundleDeployment controller against a real kube-apiserver and etcd
// (envtest) with the real image Unpacker and its per-registry-host limit (source.HostLimits, issue
// 36 item 3): BundleDeployments whose images are on a registry that accepts connections and never
// answers hold at most one of the controller's workers, while those of a healthy registry install at
// once. Run it with `make test-integration`.
package hostlimit

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
	"github.com/olmv1/olmv1/rukpak/test/integration/rukpaktest"
)

const (
	systemNamespace = "olmv1-system"
	// workers is the controller's MaxConcurrentReconciles: fewer than the stalled BundleDeployments,
	// so that without the limit they would hold every worker.
	workers = 4
	// responseTimeout is far longer than the test: a stalled pull never ends while it runs.
	responseTimeout = 10 * time.Minute
)

var (
	k8s client.Client
	// unpacks counts the Unpacks in progress per registry host.
	unpacks = &countingUnpacker{inProgress: map[string]int{}, longestWait: map[string]time.Duration{}}
)

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "rukpak per-registry-host limit integration tests", apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{rukpakv1alpha1.AddToScheme},
	}, setup))
}

// setup starts a manager running the BundleDeploymentReconciler with the real image Unpacker, as
// rukpak runs it (HostLimits.Unproven 1).
func setup(s *apiservertest.Suite) error {
	k8s = s.Client
	dir, err := os.MkdirTemp("", "rukpak-hostlimit-")
	if err != nil {
		return err
	}
	s.Cleanup(func() error { return os.RemoveAll(dir) })
	u, err := source.New(source.Config{CacheDir: dir, Client: s.Client, ResponseTimeout: responseTimeout, HostLimits: source.HostLimits{Unproven: 1}})
	if err != nil {
		return err
	}
	unpacks.DiskUnpacker = u
	mgr, err := rukpaktest.NewManager(s.Config, s.Scheme)
	if err != nil {
		return err
	}
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}); err != nil {
		return err
	}
	r := rukpaktest.PlainReconciler(mgr, k8s, unpacks, systemNamespace)
	r.MaxConcurrentReconciles = workers
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	// Stopped first (cleanups run in reverse), which ends the pulls still waiting on the stalled
	// listener; its error, if any, fails the suite.
	s.Cleanup(rukpaktest.Start(mgr))
	return nil
}

// countingUnpacker is the real Unpacker, recording per registry host the Unpacks in progress (the
// workers they hold) and how long the longest one that was deferred (UnpackPending) took.
type countingUnpacker struct {
	*source.DiskUnpacker
	mu          sync.Mutex
	inProgress  map[string]int
	longestWait map[string]time.Duration
}

func (c *countingUnpacker) Unpack(ctx context.Context, key string, src rukpakv1alpha1.Source, opts source.Options) (*source.Result, error) {
	if src.Image == nil {
		return c.DiskUnpacker.Unpack(ctx, key, src, opts)
	}
	host, start := strings.SplitN(src.Image.Ref, "/", 2)[0], time.Now()
	c.mu.Lock()
	c.inProgress[host]++
	c.mu.Unlock()
	res, err := c.DiskUnpacker.Unpack(ctx, key, src, opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inProgress[host]--
	if source.KindOf(err) == source.KindPending {
		c.longestWait[host] = max(c.longestWait[host], time.Since(start))
	}
	return res, err
}

func (c *countingUnpacker) stats(host string) (int, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inProgress[host], c.longestWait[host]
}

// stalledListener accepts connections on 127.0.0.1 and a free port and never reads nor answers; it
// returns its host:port and how many connections it accepted.
func stalledListener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String(), &accepted
}

// pushPlainBundle pushes a plain bundle holding ConfigMap name to reg.
func pushPlainBundle(t *testing.T, reg *sourcetest.Registry, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: x\n", name)
	if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.PlainBundleImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, img, "bundles/"+name+":v1")
	return reg.Ref("bundles/" + name + ":v1")
}

func newBD(t *testing.T, name, ref string) {
	t.Helper()
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     name,
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}},
		},
	}
	if err := k8s.Create(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
}

// condition returns condition typ of BundleDeployment name (nil when it has none yet).
func condition(ctx context.Context, name, typ string) (*metav1.Condition, error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return nil, err
	}
	return meta.FindStatusCondition(bd.Status.Conditions, typ), nil
}

// Twice as many BundleDeployments on a stalled registry as the controller has workers, created
// first, then BundleDeployments of a healthy registry: the healthy ones install at once (with a
// response timeout of 10 minutes, they would wait for it if the stalled pulls held the workers);
// at most one Unpack from the stalled registry is ever in progress, one connection reaches it, and
// the others say that they wait, and why, in the Installed condition the Operator mirrors.
func TestStalledRegistryHoldsOneWorker(t *testing.T) {
	stalledHost, accepted := stalledListener(t)
	healthy := sourcetest.NewRegistry(t)
	const stalled, fine = 2 * workers, 6
	for i := range stalled {
		newBD(t, fmt.Sprintf("stalled-%d", i), fmt.Sprintf("%s/bundles/stalled-%d:v1", stalledHost, i))
	}
	// All of them have been reconciled: one pulls, the others wait.
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		waiting := 0
		for i := range stalled {
			c, err := condition(ctx, fmt.Sprintf("stalled-%d", i), rukpakv1alpha1.TypeUnpacked)
			if err != nil {
				return false, err
			}
			if c != nil && c.Reason == rukpakv1alpha1.ReasonUnpackPending && strings.HasPrefix(c.Message, "waiting: registry "+stalledHost) {
				waiting++
			}
		}
		return waiting == stalled-1, nil
	}); err != nil {
		t.Fatalf("waiting for %d of the %d stalled BundleDeployments to report UnpackPending: %v", stalled-1, stalled, err)
	}

	start := time.Now()
	for i := range fine {
		name := fmt.Sprintf("healthy-%d", i)
		newBD(t, name, pushPlainBundle(t, healthy, name))
	}
	for i := range fine {
		name := fmt.Sprintf("healthy-%d", i)
		if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			c, err := condition(ctx, name, rukpakv1alpha1.TypeInstalled)
			return c != nil && c.Status == metav1.ConditionTrue, err
		}); err != nil {
			c, _ := condition(context.Background(), name, rukpakv1alpha1.TypeInstalled)
			t.Fatalf("%s not installed within a minute beside the stalled registry: %v (Installed: %+v)", name, err, c)
		}
	}
	t.Logf("%d healthy BundleDeployments installed in %s beside %d stalled ones (%d workers)", fine, time.Since(start).Round(time.Millisecond), stalled, workers)

	// One worker is held, by the pull that waits for the stalled registry; the deferred Unpacks
	// returned at once.
	inProgress, longestWait := unpacks.stats(stalledHost)
	if inProgress != 1 {
		t.Errorf("%d Unpacks from the stalled registry are in progress, want 1", inProgress)
	}
	if longestWait > 5*time.Second {
		t.Errorf("a deferred Unpack from the stalled registry took %s, want it to return at once", longestWait)
	}
	t.Logf("longest deferred Unpack: %s", longestWait)
	// One pull: go-containerregistry probes a loopback registry over https and http at once.
	if n := accepted.Load(); n < 1 || n > 2 {
		t.Errorf("the stalled registry accepted %d connections, want those of one pull (1 or 2)", n)
	}
	var c *metav1.Condition
	for i := range stalled {
		name := fmt.Sprintf("stalled-%d", i)
		if u, err := condition(t.Context(), name, rukpakv1alpha1.TypeUnpacked); err != nil || u == nil || u.Reason != rukpakv1alpha1.ReasonUnpackPending {
			continue // the one that pulls
		}
		var err error
		if c, err = condition(t.Context(), name, rukpakv1alpha1.TypeInstalled); err != nil {
			t.Fatal(err)
		}
		break
	}
	if c == nil || c.Reason != rukpakv1alpha1.ReasonInstallPending ||
		!strings.Contains(c.Message, "nothing is installed until the bundle is unpacked: waiting: registry "+stalledHost+" has not completed a pull yet") {
		t.Errorf("Installed of a waiting BundleDeployment: %+v, want InstallPending saying why it waits", c)
	}
}
