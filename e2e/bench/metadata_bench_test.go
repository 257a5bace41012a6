// Package bench holds benchmarks that need a running OLM v1: a local control plane, a local registry
// and the controllers as processes (the same environment as the e2e suite). They run under
// `make bench`; each skips with a message when the control plane binaries, the controller binaries or
// the real catalogs in $OLMV1_TESTDATA (when a benchmark needs them) are missing.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

var (
	catalogGVR  = schema.GroupVersionResource{Group: "catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogs"}
	metadataGVR = schema.GroupVersionResource{Group: "metadata.catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogmetadata"}
	apiSvcGVR   = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// olm is one environment shared by the benchmarks of this package.
var olm struct {
	once sync.Once
	env  *localcluster.Environment
	dir  string // the environment's directory (etcd's data, the controllers' logs and caches)
	dc   dynamic.Interface
	err  error
	skip string

	communityOnce sync.Once
	ref           string // community-v4.20 catalog image
	communityErr  error
	communitySkip string

	// pprof is where each controller serves net/http/pprof, when $OLMV1_BENCH_PROFILE_DIR is set.
	pprof     map[string]string
	tokenOnce sync.Once
	token     string
	tokenErr  error
}

func repoRoot() string {
	if r := os.Getenv("E2E_REPO_ROOT"); r != "" {
		return r
	}
	abs, _ := filepath.Abs(filepath.Join("..", ".."))
	return abs
}

func testdata() string {
	if d := os.Getenv("OLMV1_TESTDATA"); d != "" {
		return d
	}
	return filepath.Join(repoRoot(), "..", "shared", "testdata")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if olm.env != nil {
		_ = olm.env.Stop()
	}
	// The environment's directory goes once the benchmarks passed (etcd's data alone is 0.5 GB after
	// N = 1,000); after a failure it stays, with the controllers' logs, and its path is printed.
	if olm.dir != "" {
		if code == 0 {
			_ = os.RemoveAll(olm.dir)
		} else {
			fmt.Fprintf(os.Stderr, "the benchmark environment (logs, etcd data) is kept in %s\n", olm.dir)
		}
	}
	os.Exit(code)
}

// startOLM starts the environment once: the local control plane, the registry and the three
// controllers (with their default flags but rukpak's cache directory and Helm render limit, plus
// those in $BENCH_CATALOGD_ARGS, $BENCH_RUKPAK_ARGS and $BENCH_OPERATOR_CONTROLLER_ARGS, for
// experiments; with $OLMV1_BENCH_PROFILE_DIR set, rukpak and operator-controller also serve pprof on
// free loopback ports), and waits until catalogd's CatalogMetadata APIService is Available.
func startOLM(b *testing.B) {
	b.Helper()
	olm.once.Do(func() {
		binDir := filepath.Join(repoRoot(), "bin")
		if _, err := os.Stat(filepath.Join(binDir, "catalogd")); err != nil {
			olm.skip = "controller binaries not built in " + binDir + " (run `make build`)"
			return
		}
		if _, err := localcluster.CachedBinaries(localcluster.DefaultCacheDir()); err != nil {
			olm.skip = err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "olmv1-bench-")
		if err != nil {
			olm.err = err
			return
		}
		olm.dir = dir
		port, err := localcluster.FreePort()
		if err != nil {
			olm.err = err
			return
		}
		ctx := context.Background()
		// rukpak's cache is the environment's own (its default, $TMPDIR/olmv1-rukpak, is shared with
		// any other rukpak on the machine), and its Helm render limit is benchHelmRenderTimeout
		// (BenchmarkOperatorsHeadOfLine's slow chart); $BENCH_RUKPAK_ARGS comes last and wins.
		rukpakArgs := append([]string{
			"--cache-dir=" + filepath.Join(dir, "rukpak", "cache"), "--helm-render-timeout=" + benchHelmRenderTimeout.String(),
		}, strings.Fields(os.Getenv("BENCH_RUKPAK_ARGS"))...)
		ocArgs := strings.Fields(os.Getenv("BENCH_OPERATOR_CONTROLLER_ARGS"))
		if os.Getenv("OLMV1_BENCH_PROFILE_DIR") != "" {
			olm.pprof = map[string]string{}
			for _, name := range []string{"rukpak", "operator-controller"} {
				p, err := localcluster.FreePort()
				if err != nil {
					olm.err = err
					return
				}
				olm.pprof[name] = "127.0.0.1:" + strconv.Itoa(p)
			}
			rukpakArgs = append(rukpakArgs, "--pprof-bind-address="+olm.pprof["rukpak"])
			ocArgs = append(ocArgs, "--pprof-bind-address="+olm.pprof["operator-controller"])
		}
		olm.env, olm.err = localcluster.StartEnvironment(ctx, localcluster.EnvOptions{
			RepoRoot: repoRoot(), BinDir: binDir, Dir: dir,
			// $BENCH_KUBE_CONTROLLER_MANAGER_ARGS and $BENCH_KUBE_SCHEDULER_ARGS: e.g. their client's QPS
			// (--kube-api-qps, default 20 and 50), which paces the Deployments' rollouts at N = 1,000;
			// $BENCH_KUBE_APISERVER_ARGS: e.g. --audit-policy-file and --audit-log-path, to see which
			// client sends which requests.
			ClusterArgs: map[string][]string{
				"kube-apiserver":          strings.Fields(os.Getenv("BENCH_KUBE_APISERVER_ARGS")),
				"kube-controller-manager": strings.Fields(os.Getenv("BENCH_KUBE_CONTROLLER_MANAGER_ARGS")),
				"kube-scheduler":          strings.Fields(os.Getenv("BENCH_KUBE_SCHEDULER_ARGS")),
			},
			ControllerArgs: map[string][]string{
				"catalogd": append([]string{
					"--storage-dir=" + filepath.Join(dir, "catalogd", "storage"), "--cache-dir=" + filepath.Join(dir, "catalogd", "cache"),
					"--metadata-bind-address=127.0.0.1:" + strconv.Itoa(port), "--metadata-cert-dir=" + filepath.Join(dir, "catalogd", "metadata-certs"),
					"--metadata-apiservice=local",
				}, strings.Fields(os.Getenv("BENCH_CATALOGD_ARGS"))...),
				"rukpak":              rukpakArgs,
				"operator-controller": ocArgs,
			},
		})
		if olm.err != nil {
			return
		}
		// No client-side rate limit: client-go's default (5 QPS) would be what the benchmark measures.
		cfg := rest.CopyConfig(olm.env.Config)
		cfg.QPS, cfg.Burst = -1, 0
		if olm.dc, olm.err = dynamic.NewForConfig(cfg); olm.err != nil {
			return
		}
		olm.err = waitAPIService(ctx)
	})
	if olm.skip != "" {
		b.Skip(olm.skip)
	}
	if olm.err != nil {
		b.Fatal(olm.err)
	}
}

// setup starts the environment and serves community-v4.20 from the local registry (once).
func setup(b *testing.B) {
	b.Helper()
	catalogDir := filepath.Join(testdata(), "catalogs", "community-v4.20")
	if _, err := os.Stat(catalogDir); err != nil {
		b.Skip("real catalog not found at " + catalogDir + " (set OLMV1_TESTDATA)")
	}
	startOLM(b)
	olm.communityOnce.Do(func() {
		img, err := imagebuild.CatalogImage(catalogDir)
		if err != nil {
			olm.communityErr = err
			return
		}
		olm.ref = olm.env.Registry.Addr + "/catalogs/community:v4.20"
		_, olm.communityErr = imagebuild.Push(context.Background(), img, olm.ref, imagebuild.WithInsecure())
	})
	if olm.communityErr != nil {
		b.Fatal(olm.communityErr)
	}
}

func waitAPIService(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		as, err := olm.dc.Resource(apiSvcGVR).Get(ctx, "v1alpha1.metadata.catalogd.operatorframework.io", metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// serveCatalogs creates n Catalogs of the community image and waits until each serves its content.
func serveCatalogs(b *testing.B, n int) []string {
	b.Helper()
	ctx := context.Background()
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("community-%d", i)
		names = append(names, name)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": olm.ref}}},
		}}
		if _, err := olm.dc.Resource(catalogGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			c, err := olm.dc.Resource(catalogGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Serving" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			b.Fatalf("catalog %s not serving: %v", name, err)
		}
	}
	return names
}

// BenchmarkCatalogMetadataListPackage lists one package's blobs of a community-v4.20-sized catalog
// through kube-apiserver (aggregation layer → catalogd), while catalogd serves five such catalogs: a
// small package (kube-green) and the largest one (opendatahub-operator, whose bundles carry big CSV
// metadata). Reports p50/p99 latency, the bytes of one list, and catalogd's RSS.
func BenchmarkCatalogMetadataListPackage(b *testing.B) {
	setup(b)
	serveCatalogs(b, 5)
	for _, pkg := range []string{"kube-green", "opendatahub-operator"} {
		b.Run(pkg, func(b *testing.B) { benchmarkList(b, pkg) })
	}
}

func benchmarkList(b *testing.B, pkg string) {
	ctx := context.Background()
	rc := olm.dc.Resource(metadataGVR)
	opts := metav1.ListOptions{FieldSelector: "spec.catalog=community-0,spec.package=" + pkg}
	first, err := rc.List(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	if len(first.Items) == 0 {
		b.Fatalf("no blobs for %s", pkg)
	}
	raw, err := first.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		l, err := rc.List(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if len(l.Items) != len(first.Items) {
			b.Fatalf("got %d blobs, want %d", len(l.Items), len(first.Items))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(first.Items)), "blobs/list")
	b.ReportMetric(float64(len(raw))/(1<<10), "KiB/list")
	if c := olm.env.Controller("catalogd"); c != nil {
		if rss, err := localcluster.RSS(c.PID); err == nil {
			b.ReportMetric(float64(rss)/(1<<20), "catalogd-rss-MB")
		}
		// Where the resident memory is: anonymous (heap, stacks) or file-backed (the binary's code).
		for field, unit := range map[string]string{"RssAnon": "catalogd-anon-MB", "RssFile": "catalogd-file-MB"} {
			if mb := procStatusMB(c.PID, field); mb > 0 {
				b.ReportMetric(mb, unit)
			}
		}
	}
}
