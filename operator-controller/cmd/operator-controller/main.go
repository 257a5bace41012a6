// Command operator-controller runs the Operator controller: it resolves packages from catalogs with
// deppy and installs them through rukpak BundleDeployments.
package main

import (
	"context"
	"flag"
	"os"
	"time"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	"github.com/olmv1/olmv1/platform/boot"
	"github.com/olmv1/olmv1/platform/conditionevents"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

func main() {
	var (
		pageSize  int64
		qps       float64
		workers   int
		readWhole bool
		directDir string
		directNS  string
		noDirect  bool
	)
	os.Exit(boot.Main(boot.Component{
		Name: "operator-controller",
		// Collecting at 50 % heap growth instead of Go's 100 %, as catalogd does: with the default, the
		// upgrade of 1,000 Operators took its RSS from 118 to 208 MiB, mostly garbage of the
		// upgrade's reconciles (docs/performance.md, fix 12). GOGC in the environment still wins.
		GCPercent: 50,
		CRDs: []string{
			"operators.operators.operatorframework.io",
			"catalogs.catalogd.operatorframework.io",
			"bundledeployments.core.rukpak.io",
		},
		AddToScheme: []func(*runtime.Scheme) error{
			operatorsv1alpha1.AddToScheme, catalogdv1alpha1.AddToScheme, rukpakv1alpha1.AddToScheme,
			catalogs.AddToScheme, operatorsv2.AddToScheme,
		},
		DefaultMetricsPort: 9443,
		DefaultProbePort:   9081,
		BindFlags: func(fs *flag.FlagSet) {
			fs.Int64Var(&pageSize, "catalogmetadata-page-size", 500, "number of CatalogMetadata blobs per list request when reading a catalog")
			fs.Float64Var(&qps, "kube-api-qps", 200, "requests per second to the API server (burst: twice as many; the API server's priority and fairness protects it)")
			fs.BoolVar(&readWhole, "read-whole-catalogs", false,
				"read every blob of every serving catalog and check its content hash, instead of only the packages Operators (and their dependencies) need; for a catalogd that does not annotate CatalogMetadata with catalogd.operatorframework.io/content-hash")
			fs.StringVar(&directDir, "direct-bundle-cache-dir", "",
				"where the content of installed direct bundles (spec.source.type Bundle) is unpacked to read their package, version and dependencies (default: a new directory under $TMPDIR, one per process)")
			fs.StringVar(&directNS, "direct-bundle-namespace", "olmv1-system", "namespace the ConfigMaps of direct bundles' ConfigMaps sources are read from (rukpak's)")
			fs.BoolVar(&noDirect, "no-direct-bundle-metadata", false,
				"do not read installed direct bundles' content: their status names them by source only (for clusters where operator-controller cannot reach registries)")
			fs.IntVar(&workers, "max-concurrent-reconciles", controller.DefaultMaxConcurrentReconciles,
				"Operators reconciled at once (resolution itself runs once for a burst of changes)")
		},
		ManagerOptions: func(o *ctrl.Options) { o.Cache = controller.CacheOptions() },
		Setup: func(_ context.Context, mgr ctrl.Manager) error {
			// Installing many Operators takes a few writes each: client-go's default of 5 requests per
			// second would make a burst crawl. Reads of cached kinds come from the manager's cache.
			cfg := rest.CopyConfig(mgr.GetConfig())
			cfg.QPS, cfg.Burst = float32(qps), 2*int(qps)
			direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
			if err != nil {
				return err
			}
			cached, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
				Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
			if err != nil {
				return err
			}
			disc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			// The cluster's version, read from discovery at the first resolution and again when
			// it is older than ten minutes: a cluster upgrade is seen within that time.
			versions := &cluster.VersionCache{TTL: 10 * time.Minute, Read: func(ctx context.Context) (*olm.Cluster, error) {
				return cluster.ReadClusterVersion(ctx, disc, nil)
			}}
			// OperatorConditions need their CRD (the chart's crds/, which `helm upgrade` does not
			// apply): without it operator-controller works as before and says so.
			_, ocErr := mgr.GetRESTMapper().RESTMapping(operatorsv2.GroupVersion.WithKind("OperatorCondition").GroupKind(), operatorsv2.GroupVersion.Version)
			if ocErr != nil {
				ctrl.Log.Info("OperatorConditions are off: the CRD operatorconditions.operators.coreos.com (v2) is not served; "+
					"apply the chart's CRDs (kubectl apply --server-side -f deploy/charts/olmv1/crds) and restart operator-controller", "error", ocErr.Error())
			}
			var directBundles *controller.DirectBundleReader
			if !noDirect {
				// The digest rukpak installed is pulled again, anonymously and without mirrors: a
				// bundle that needs a pull secret or a mirror is reported as unreadable.
				if directDir == "" {
					// One directory per process: the unpacker removes what no key of its own refers to.
					if directDir, err = os.MkdirTemp("", "olmv1-operator-controller-"); err != nil {
						return err
					}
				}
				unpacker, err := source.New(source.Config{CacheDir: directDir, Client: direct, Log: ctrl.Log.WithName("direct-bundles")})
				if err != nil {
					return err
				}
				directBundles = &controller.DirectBundleReader{Unpacker: unpacker, Namespace: directNS,
					ServesKind: controller.DiscoveryServesKind(controller.DiscoveryKinds(disc))}
			}
			// Events go through a client of their own at --kube-api-qps: the manager's recorder has
			// client-go's 5 requests per second, and its backlog grew with every Operator.
			recorder, stopEvents, err := conditionevents.NewRecorder(cfg, mgr.GetScheme(), "operator-controller")
			if err != nil {
				return err
			}
			if err := mgr.Add(stopEvents); err != nil {
				return err
			}
			return (&controller.OperatorReconciler{
				ClusterVersion: versions.Get,
				Client:         cached,
				APIReader:      direct,
				Catalogs:       &catalogs.Cache{Reader: &catalogs.MetadataReader{Client: direct, PageSize: pageSize}, ReadWhole: readWhole},
				Metrics:        controller.NewMetrics(crmetrics.Registry),
				Recorder:       recorder,

				MaxConcurrentReconciles: workers,
				NoOperatorConditions:    ocErr != nil,
				DirectBundles:           directBundles,
			}).SetupWithManager(mgr)
		},
	}, os.Args[1:]))
}
