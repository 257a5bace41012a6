// Command catalogd runs the Catalog controller: it unpacks file-based catalogs and serves their content.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/controller"
	"github.com/olmv1/olmv1/catalogd/internal/metadataapi"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/platform/boot"
	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

// flags are catalogd's own flags (the common ones are boot's).
type flags struct {
	storageDir      string
	cacheDir        string
	namespace       string
	httpBindAddress string
	httpExternalURL string
	// tlsCertFile and tlsKeyFile are the deprecated --tls-cert-file/--tls-key-file of the content
	// endpoint (the component's --tls-cert-dir replaces them).
	tlsCertFile  string
	tlsKeyFile   string
	httpInsecure bool

	metadataBindAddress string
	// metadataCertDir is the deprecated --metadata-cert-dir (the component's --tls-cert-dir replaces it).
	metadataCertDir    string
	metadataAPIService string

	maxConcurrentUnpacks int
	// requireSignatures is --require-image-signatures: the Secret of the cluster-wide default
	// signature policy of catalog images.
	requireSignatures string

	// mirrors is the registry mirror configuration of catalog image pulls.
	mirrors mirrors.Flags
	// tls is the --tls-profile of the content endpoint, the CatalogMetadata API and source pulls.
	tls boot.TLSProfile
	// cert is the --tls-cert-dir serving certificate of the metrics endpoint, the content endpoint and
	// the CatalogMetadata API (boot reloads it).
	cert *boot.ServingCert
}

func (f *flags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.storageDir, "storage-dir", filepath.Join(os.TempDir(), "catalogd", "storage"),
		"directory where the served content of every Catalog is stored (survives restarts)")
	fs.StringVar(&f.cacheDir, "cache-dir", filepath.Join(os.TempDir(), "catalogd", "cache"),
		"directory where sources are unpacked before they are parsed")
	fs.StringVar(&f.namespace, "namespace", "olmv1-system",
		"namespace the ConfigMaps and Secrets named by Catalog sources are read from")
	fs.StringVar(&f.httpBindAddress, "http-bind-address", "127.0.0.1:7082",
		"address of the content endpoint (/catalogs/<name>/all.json and /catalogs/<name>/api/v1/metas)")
	fs.StringVar(&f.httpExternalURL, "http-external-url", "",
		"base URL clients reach the content endpoint at, used in status.contentURL; default <scheme>://<http-bind-address>")
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "deprecated, use --tls-cert-dir: PEM certificate of the content endpoint only")
	fs.StringVar(&f.tlsKeyFile, "tls-key-file", "", "deprecated, use --tls-cert-dir: PEM private key of the content endpoint only")
	fs.BoolVar(&f.httpInsecure, "http-insecure", false,
		"serve the content endpoint over plain HTTP; without it, HTTPS with the --tls-cert-dir certificate")
	fs.StringVar(&f.metadataBindAddress, "metadata-bind-address", "127.0.0.1:7444",
		"HTTPS address of the CatalogMetadata aggregated API (metadata.catalogd.operatorframework.io); \":PORT\" listens on every IPv4 interface, \"0\" disables it")
	fs.StringVar(&f.metadataCertDir, "metadata-cert-dir", "",
		"deprecated, use --tls-cert-dir: directory with tls.crt and tls.key (or apiserver.crt and apiserver.key) for the CatalogMetadata API only; when it holds neither, a certificate is generated in memory")
	fs.StringVar(&f.metadataAPIService, "metadata-apiservice", "none",
		"register the CatalogMetadata APIService: \"local\" (an ExternalName Service pointing at localhost, for a control plane on this machine), \"service:<namespace>/<name>[:port]\" (an in-cluster Service), or \"none\"")
	fs.IntVar(&f.maxConcurrentUnpacks, "max-concurrent-unpacks", 0,
		"how many Catalogs are unpacked, parsed and stored at once; 0 derives it from the container's memory limit (cgroup v2 memory.max): (limit - 128 MiB) / 64 MiB, between 1 and 8, or 2 without a limit")
	f.mirrors.Bind(fs)
	source.BindRequireSignatures(fs, &f.requireSignatures)
}

// metadataListenAddress validates --metadata-bind-address and returns the address to listen on
// (an IP: ":7444", as the chart passes it, becomes 0.0.0.0:7444) and the port.
func metadataListenAddress(flag string) (string, int32, error) {
	host, portStr, err := net.SplitHostPort(flag)
	if err != nil {
		return "", 0, fmt.Errorf("--metadata-bind-address %q: %w", flag, err)
	}
	port, err := strconv.ParseInt(portStr, 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("--metadata-bind-address %q: bad port: %w", flag, err)
	}
	if host == "" {
		host = "0.0.0.0"
	} else if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("--metadata-bind-address %q: the host must be an IP address (or empty for every interface)", flag)
	}
	return net.JoinHostPort(host, portStr), int32(port), nil
}

// setupMetadataAPI serves the CatalogMetadata aggregated API from store.
func (f *flags) setupMetadataAPI(mgr ctrl.Manager, store *storage.Store) error {
	if f.metadataBindAddress == "0" {
		return nil
	}
	bindAddress, port, err := metadataListenAddress(f.metadataBindAddress)
	if err != nil {
		return err
	}
	reg, err := metadataapi.ParseRegistration(f.metadataAPIService, f.namespace, port)
	if err != nil {
		return err
	}
	return metadataapi.AddToManager(mgr, store, metadataapi.ServerOptions{
		BindAddress: bindAddress,
		Cert:        f.metadataCert(),
		CertDir:     f.metadataCertDir,
		ExtraSANs:   f.serviceNames(),
		TLS:         f.tls,
	}, reg)
}

// metadataCert is the CatalogMetadata API's certificate: the component's, unless the deprecated
// --metadata-cert-dir gives it one of its own (nil: the server loads the directory).
func (f *flags) metadataCert() *boot.ServingCert {
	if f.metadataCertDir != "" {
		return nil
	}
	return f.cert
}

// serviceNames are the Service names a generated certificate is valid for: the chart's Service and
// the ExternalName Service of --metadata-apiservice=local (kube-apiserver verifies the aggregated API
// server as <service>.<namespace>.svc).
func (f *flags) serviceNames() []string {
	return []string{"catalogd." + f.namespace + ".svc", "catalogd-metadata." + f.namespace + ".svc"}
}

// servingCertHosts are the names and addresses of catalogd's generated certificate.
func (f *flags) servingCertHosts() []string {
	hosts := f.serviceNames()
	if host, _, err := net.SplitHostPort(f.httpBindAddress); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	return hosts
}

// contentCert is the content endpoint's certificate: the component's, or with the deprecated
// --tls-cert-file/--tls-key-file a loader of its own that mgr reloads and checks (/readyz
// content-cert).
func (f *flags) contentCert(mgr ctrl.Manager) (*boot.ServingCert, error) {
	if f.tlsCertFile == "" && f.tlsKeyFile == "" {
		return f.cert, nil
	}
	switch {
	case f.tlsCertFile == "" || f.tlsKeyFile == "":
		return nil, errors.New("--tls-cert-file and --tls-key-file must be given together (both are deprecated: use --tls-cert-dir)")
	case f.httpInsecure:
		return nil, errors.New("--http-insecure cannot be combined with --tls-cert-file/--tls-key-file")
	}
	ctrl.Log.WithName("catalogd").Info("--tls-cert-file and --tls-key-file are deprecated: use --tls-cert-dir, the certificate of every TLS server of catalogd")
	cert, err := boot.NewServingCert(boot.ServingCertOptions{
		What: "content endpoint", Flag: "--tls-cert-file/--tls-key-file", CertFile: f.tlsCertFile, KeyFile: f.tlsKeyFile,
	})
	if err != nil {
		return nil, err
	}
	return cert, boot.AddServingCert(mgr, "content-cert", cert)
}

// defaultGCPercent is catalogd's GOGC unless the environment sets one. catalogd's live heap is small
// (12–15 MB serving five community catalogs) and its unpacks are streamed, so collecting at 50%
// growth instead of Go's 100% keeps the serving footprint about 7 MB smaller, for about 10% more CPU
// while storing a large catalog (docs/catalogd.md, "Memory").
const defaultGCPercent = 50

func main() {
	f := &flags{}
	os.Exit(boot.Main(boot.Component{
		Name:               "catalogd",
		GCPercent:          defaultGCPercent,
		CRDs:               []string{"catalogs.catalogd.operatorframework.io"},
		AddToScheme:        []func(*runtime.Scheme) error{catalogdv1alpha1.AddToScheme},
		DefaultMetricsPort: 7443,
		DefaultProbePort:   7081,
		BindFlags:          f.bind,
		Setup:              f.setup,
		TLSProfile:         &f.tls,
		ServingCert:        &f.cert,
		ServingCertHosts:   f.servingCertHosts,
	}, os.Args[1:]))
}

func (f *flags) setup(_ context.Context, mgr ctrl.Manager) error {
	unpacks, err := unpackConcurrency(f.maxConcurrentUnpacks, cgroupMemoryMax)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("catalogd").Info("concurrent unpacks", "max", describeUnpackConcurrency(f.maxConcurrentUnpacks, unpacks, cgroupMemoryMax))
	store, err := storage.New(f.storageDir)
	if err != nil {
		return err
	}
	for _, d := range store.Dropped {
		ctrl.Log.WithName("catalogd").Error(nil, "damaged stored content removed; the catalog is unpacked again", "content", d)
	}
	contentCert, err := f.contentCert(mgr)
	if err != nil {
		return err
	}
	srv := &serve.Server{
		Addr:     f.httpBindAddress,
		Cert:     contentCert,
		Insecure: f.httpInsecure,
		TLS:      f.tls,
		Handler:  &serve.Handler{Store: store},
		Log:      ctrl.Log.WithName("catalogd").WithName("content"),
	}
	base := f.httpExternalURL
	if base == "" {
		base = fmt.Sprintf("%s://%s", srv.Scheme(), f.httpBindAddress)
	}
	if err := mgr.Add(srv); err != nil {
		return err
	}
	if err := f.setupMetadataAPI(mgr, store); err != nil {
		return err
	}
	unpacker, err := newUnpacker(mgr, f)
	if err != nil {
		return err
	}
	// Every replica unpacks and serves every Catalog from its own store: the leader's reconciler from
	// spec (and it alone writes status), the others' Syncer exactly the source the status names.
	loader := replica.NewLoader(unpacker, store, f.namespace)
	syncer := &replica.Syncer{Loader: loader, MaxConcurrentLoads: unpacks}
	if err := syncer.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("catalogs", syncer.ReadyCheck); err != nil {
		return err
	}
	// Events go through a client of their own, as in every controller (conditionevents.NewRecorder).
	recorder, stopEvents, err := conditionevents.NewRecorder(mgr.GetConfig(), mgr.GetScheme(), "catalogd")
	if err != nil {
		return err
	}
	if err := mgr.Add(stopEvents); err != nil {
		return err
	}
	return (&controller.CatalogReconciler{
		Client:               mgr.GetClient(),
		Loader:               loader,
		ContentBaseURL:       base,
		Recorder:             recorder,
		MaxConcurrentUnpacks: unpacks,
	}).SetupWithManager(mgr)
}
