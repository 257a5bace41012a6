// Command catalogd runs the Catalog controller: it unpacks file-based catalogs and serves their content.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
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
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

// flags are catalogd's own flags (the common ones are boot's).
type flags struct {
	storageDir      string
	cacheDir        string
	namespace       string
	httpBindAddress string
	httpExternalURL string
	tlsCertFile     string
	tlsKeyFile      string
	httpInsecure    bool

	metadataBindAddress string
	metadataCertDir     string
	metadataAPIService  string

	maxConcurrentUnpacks int

	// mirrors is the registry mirror configuration of catalog image pulls.
	mirrors mirrors.Flags
	// tls is the --tls-profile of the content endpoint, the CatalogMetadata API and source pulls.
	tls boot.TLSProfile
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
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "PEM certificate of the content endpoint (reloaded when it changes)")
	fs.StringVar(&f.tlsKeyFile, "tls-key-file", "", "PEM private key of the content endpoint")
	fs.BoolVar(&f.httpInsecure, "http-insecure", false,
		"serve the content endpoint over plain HTTP; without it, HTTPS with --tls-cert-file/--tls-key-file or a generated self-signed certificate")
	fs.StringVar(&f.metadataBindAddress, "metadata-bind-address", "127.0.0.1:7444",
		"HTTPS address of the CatalogMetadata aggregated API (metadata.catalogd.operatorframework.io); \":PORT\" listens on every IPv4 interface, \"0\" disables it")
	fs.StringVar(&f.metadataCertDir, "metadata-cert-dir", filepath.Join(os.TempDir(), "catalogd", "metadata-certs"),
		"directory with apiserver.crt and apiserver.key for the CatalogMetadata API; a self-signed pair is generated there when absent")
	fs.StringVar(&f.metadataAPIService, "metadata-apiservice", "none",
		"register the CatalogMetadata APIService: \"local\" (an ExternalName Service pointing at localhost, for a control plane on this machine), \"service:<namespace>/<name>[:port]\" (an in-cluster Service), or \"none\"")
	fs.IntVar(&f.maxConcurrentUnpacks, "max-concurrent-unpacks", 0,
		"how many Catalogs are unpacked, parsed and stored at once; 0 derives it from the container's memory limit (cgroup v2 memory.max): (limit - 128 MiB) / 64 MiB, between 1 and 8, or 2 without a limit")
	f.mirrors.Bind(fs)
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
		CertDir:     f.metadataCertDir,
		ExtraSANs:   []string{"catalogd-metadata." + f.namespace + ".svc", "catalogd." + f.namespace + ".svc"},
		TLS:         f.tls,
	}, reg)
}

// defaultGCPercent is catalogd's GOGC unless the environment sets one. catalogd's live heap is small
// (12–15 MB serving five community catalogs) and its unpacks are streamed, so collecting at 50%
// growth instead of Go's 100% keeps the serving footprint about 7 MB smaller, for about 10% more CPU
// while storing a large catalog (docs/catalogd.md, "Memory").
const defaultGCPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	f := &flags{}
	os.Exit(boot.Main(boot.Component{
		Name:               "catalogd",
		CRDs:               []string{"catalogs.catalogd.operatorframework.io"},
		AddToScheme:        []func(*runtime.Scheme) error{catalogdv1alpha1.AddToScheme},
		DefaultMetricsPort: 7443,
		DefaultProbePort:   7081,
		BindFlags:          f.bind,
		Setup:              f.setup,
		TLSProfile:         &f.tls,
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
	srv := &serve.Server{
		Addr:     f.httpBindAddress,
		CertFile: f.tlsCertFile,
		KeyFile:  f.tlsKeyFile,
		Insecure: f.httpInsecure,
		TLS:      f.tls,
		Handler:  &serve.Handler{Store: store},
		Log:      ctrl.Log.WithName("catalogd").WithName("content"),
	}
	if err := srv.Validate(); err != nil {
		return err
	}
	base := f.httpExternalURL
	if base == "" {
		base = fmt.Sprintf("%s://%s", srv.Scheme(), f.httpBindAddress)
	}
	if err := mgr.Add(srv); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("content-cert", srv.CertReady); err != nil {
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
	return (&controller.CatalogReconciler{
		Client:               mgr.GetClient(),
		Loader:               loader,
		ContentBaseURL:       base,
		Recorder:             mgr.GetEventRecorder("catalogd"),
		MaxConcurrentUnpacks: unpacks,
	}).SetupWithManager(mgr)
}
