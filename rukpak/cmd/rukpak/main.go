// Command rukpak runs the BundleDeployment controller: it unpacks bundles, provisions them into
// manifests, applies them as Helm release revisions and reports their health.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/olmv1/olmv1/platform/boot"
	"github.com/olmv1/olmv1/platform/conditionevents"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
	"github.com/olmv1/olmv1/rukpak/internal/platformcerts"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/helm"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/kustomize"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/pkg/preflight"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

// flags are rukpak's own flags (the common ones are in boot).
type flags struct {
	namespace  string
	cacheDir   string
	maxHistory int
	qps        float64
	// maxConcurrentReconciles is how many BundleDeployments are reconciled at once.
	maxConcurrentReconciles int
	webhooks                webhookFlags
	// helmLimits bound rendering a Helm chart's templates.
	helmLimits helm.Limits
	// platform renews OLM v1's own certificates (chart tls.mode=selfSigned).
	platform platformcerts.Flags
	// mirrors is the registry mirror configuration of bundle image pulls.
	mirrors mirrors.Flags
	// tls is the --tls-profile, for the registries, HTTP sources and git servers bundles come from.
	tls boot.TLSProfile
	// requireSignatures is --require-image-signatures: the Secret of the cluster-wide default
	// signature policy of bundle images.
	requireSignatures string
	// unpackTimeout bounds one unpack; responseTimeout each request's wait for an answer.
	unpackTimeout, responseTimeout time.Duration
}

func (f *flags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.namespace, "namespace", "olmv1-system",
		"rukpak's namespace: Helm release Secrets are stored there, and Secrets and ConfigMaps named by bundle sources are read from it (created when missing)")
	fs.StringVar(&f.cacheDir, "cache-dir", filepath.Join(os.TempDir(), "olmv1-rukpak"), "directory where unpacked bundles are cached")
	fs.IntVar(&f.maxHistory, "max-history", 10, "revisions kept per BundleDeployment (Helm release history); older ones are deleted")
	fs.Float64Var(&f.qps, "kube-api-qps", 400, "requests per second to the API server for applying bundles, storing revisions and writing BundleDeployment status (burst: twice as many; the API server's priority and fairness protects it)")
	fs.IntVar(&f.maxConcurrentReconciles, "max-concurrent-reconciles", 8,
		"BundleDeployments reconciled (unpacked, applied, health-checked) at once; the same BundleDeployment is never reconciled twice at once")
	fs.DurationVar(&f.helmLimits.Timeout, "helm-render-timeout", helm.DefaultRenderTimeout,
		"how long rendering a Helm chart's templates may take before the bundle is reported RenderLimitExceeded")
	fs.Int64Var(&f.helmLimits.MaxOutputBytes, "helm-render-max-bytes", helm.DefaultMaxRenderedBytes,
		"bytes one render of a Helm chart's templates may produce before the bundle is reported RenderLimitExceeded (a render uses about five times its output in memory)")
	fs.IntVar(&f.helmLimits.MaxConcurrent, "helm-max-concurrent-renders", helm.DefaultMaxConcurrentRenders,
		"Helm renders running at once, renders past their time limit included (they cannot be interrupted)")
	fs.DurationVar(&f.unpackTimeout, "unpack-timeout", source.DefaultTimeout,
		"how long fetching and unpacking one bundle may take, network included, before it is reported UnpackFailed and retried with backoff")
	fs.DurationVar(&f.responseTimeout, "source-response-timeout", source.DefaultResponseTimeout,
		"how long to wait for a registry, HTTP source or git server to answer a request (its response headers) before the bundle is reported UnpackFailed; a server that accepts connections and never answers then holds a worker this long, not --unpack-timeout")
	f.webhooks.bind(fs)
	f.platform.Bind(fs)
	f.mirrors.Bind(fs)
	source.BindRequireSignatures(fs, &f.requireSignatures)
}

func main() {
	var f flags
	os.Exit(boot.Main(boot.Component{
		Name:               "rukpak",
		CRDs:               []string{"bundledeployments.core.rukpak.io"},
		AddToScheme:        []func(*runtime.Scheme) error{rukpakv1alpha1.AddToScheme, apiextensionsv1.AddToScheme},
		DefaultMetricsPort: 8443,
		DefaultProbePort:   8081,
		BindFlags:          f.bind,
		ManagerOptions:     func(o *ctrl.Options) { o.Cache = controller.CacheOptions() },
		Setup:              f.setup,
		TLSProfile:         &f.tls,
	}, os.Args[1:]))
}

func (f *flags) setup(ctx context.Context, mgr ctrl.Manager) error {
	// Applying a bundle and storing its revision take a dozen requests: client-go's default of 5
	// requests per second would make installing many bundles crawl.
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = float32(f.qps), 2*int(f.qps)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, cs, f.namespace); err != nil {
		return err
	}
	// The manager's client reads from the label-scoped cache; applying, preflight checks of custom
	// resources and source Secrets need the API server itself.
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return err
	}
	unpacker, err := newUnpacker(f.cacheDir, direct, f.mirrors, f.tls, f.requireSignatures, f.unpackTimeout, f.responseTimeout)
	if err != nil {
		return err
	}
	// BundleDeployments are read from the manager's cache but written (finalizer, status) at --kube-api-qps:
	// the manager's own client has client-go's default limit of 5 requests per second.
	cached, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
	if err != nil {
		return err
	}
	// Events go through a client of their own at --kube-api-qps, not the manager's 5 requests per second.
	recorder, stopEvents, err := conditionevents.NewRecorder(cfg, mgr.GetScheme(), "rukpak")
	if err != nil {
		return err
	}
	if err := mgr.Add(stopEvents); err != nil {
		return err
	}
	r := &controller.BundleDeploymentReconciler{
		Client:         mgr.GetClient(),
		EndpointReader: direct,
		Unpacker:       unpacker,
		Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{
			rukpakv1alpha1.ProvisionerPlain:     plain.New(),
			rukpakv1alpha1.ProvisionerHelm:      helm.New(helm.WithLimits(f.helmLimits)),
			rukpakv1alpha1.ProvisionerKustomize: kustomize.New(),
		},
		Gatherer: &provisioner.Gatherer{
			// valuesFrom names Secrets and ConfigMaps outside rukpak's label-scoped cache: read them directly.
			Values:       direct,
			Capabilities: provisioner.DiscoveryCapabilities(cs.Discovery(), time.Minute),
			Mapper:       mgr.GetRESTMapper(),
		},
		Engine: &apply.Engine{
			Client:  direct,
			Scheme:  mgr.GetScheme(),
			Storage: apply.NewSecretsStorage(cs, f.namespace, f.maxHistory),
		},
		Preflight: preflight.CRDUpgradeSafety(direct),
		Namespace: f.namespace,
		Recorder:  recorder,
	}
	r.Client, r.MaxConcurrentReconciles = cached, f.maxConcurrentReconciles
	// helm valuesFrom Secrets and ConfigMaps: watched one by one by name, metadata only.
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r.ValuesWatch = controller.NewValuesWatch(md)
	r.Metrics = controller.NewMetrics(crmetrics.Registry)
	f.webhooks.recorder, f.webhooks.log = recorder, mgr.GetLogger().WithName("webhook-ca")
	if r.Renderers[rukpakv1alpha1.ProvisionerRegistry], err = f.webhooks.registryRenderer(ctx, cs, f.namespace); err != nil {
		return err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := f.setupPlatformCerts(mgr, cs, cfg); err != nil {
		return err
	}
	return f.webhooks.startRotation(mgr, r.ResyncAll)
}

// setupPlatformCerts adds the platform certificate rotator when --platform-ca-secret is set. It reads
// and writes its Secrets and APIServices directly (not through the label-scoped cache), so that
// get/update/patch by name is all the RBAC it needs.
func (f *flags) setupPlatformCerts(mgr ctrl.Manager, cs kubernetes.Interface, cfg *rest.Config) error {
	if !f.platform.Enabled() {
		return nil
	}
	pc, err := f.platform.Config()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	rot := platformcerts.New(pc, cs, dyn)
	rot.Recorder = mgr.GetEventRecorder("rukpak-platform-certs")
	rot.Log = mgr.GetLogger().WithName("platform-certs")
	return mgr.Add(rot)
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("rukpak's namespace %q (--namespace) does not exist and cannot be created: %w", name, err)
	}
	return nil
}
