package boot

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Component describes one controller binary.
type Component struct {
	// Name is the binary and the component, e.g. "catalogd".
	Name string
	// CRDs must be Established before the manager starts.
	CRDs []string
	// AddToScheme registers the API types the component reads and writes.
	AddToScheme []func(*runtime.Scheme) error
	// DefaultMetricsPort and DefaultProbePort are the default 127.0.0.1 ports of the HTTPS metrics and
	// plain-HTTP probe endpoints.
	DefaultMetricsPort, DefaultProbePort int
	// BindFlags registers the component's own flags (optional).
	BindFlags func(*flag.FlagSet)
	// ManagerOptions adjusts the manager's options before it is created, e.g. to scope its cache
	// (optional).
	ManagerOptions func(*ctrl.Options)
	// Setup adds the component's reconcilers and runnables to the manager (optional).
	Setup func(ctx context.Context, mgr ctrl.Manager) error
	// TLSProfile, when set, receives the profile the --tls-* flags select before Setup runs: the
	// component applies it to its own TLS servers and outgoing clients (optional).
	TLSProfile *TLSProfile
	// ServingCert, when set, receives the component's serving certificate (--tls-cert-dir, or
	// generated in memory; servingcert.go) before Setup runs: the metrics endpoint serves it, and the
	// component's own TLS servers serve it too. The manager reloads it and checks it for readiness
	// (/readyz check serving-cert); the component must not start it (optional).
	ServingCert **ServingCert
	// ServingCertHosts, when set, returns the DNS names and IPs a generated certificate is valid for
	// besides the component name, localhost and the loopback addresses (e.g. Service names); it is
	// called once the flags are parsed (optional).
	ServingCertHosts func() []string
	// GCPercent, when set, is the component's GOGC unless the environment sets one: how much the heap
	// may grow over what is live before a collection (Go's default is 100). A component whose peak is
	// garbage rather than live data sets it lower, trading some CPU for memory (optional).
	GCPercent int
}

// Main parses args, waits for the component's CRDs and runs its manager until SIGTERM or SIGINT. It
// returns the process exit code.
func Main(c Component, args []string) int {
	if c.GCPercent > 0 && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(c.GCPercent)
	}
	var o Options
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	o.BindFlags(fs, c.Name, c.DefaultMetricsPort, c.DefaultProbePort)
	if c.BindFlags != nil {
		c.BindFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := o.SetupLogging(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	profile, err := o.TLS.TLSProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if c.TLSProfile != nil {
		*c.TLSProfile = profile
	}
	if c.ServingCertHosts != nil {
		o.ServingCertHosts = c.ServingCertHosts()
	}
	log := ctrl.Log.WithName(c.Name)
	if o.MetricsCertDir != "" {
		log.Info("--metrics-cert-dir is deprecated: use --tls-cert-dir, the certificate of every TLS server of the component")
	}
	log.Info("TLS profile of every server and outgoing client (the kube-apiserver client keeps client-go's)", "profile", profile.String())
	if err := run(ctrl.SetupSignalHandler(), c, &o); err != nil {
		log.Error(err, "exiting")
		return 1
	}
	return 0
}

func run(ctx context.Context, c Component, o *Options) error {
	log := ctrl.Log.WithName(c.Name)
	cfg, err := o.RESTConfig()
	if err != nil {
		return err
	}
	log.Info("starting", "apiServer", cfg.Host, "metrics", o.MetricsBindAddress, "probes", o.HealthProbeBindAddress, "leaderElection", o.LeaderElect)
	if err := WaitForCRDs(ctx, cfg, log, o.CRDWaitTimeout, c.CRDs...); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, c.AddToScheme...) {
		if err := add(scheme); err != nil {
			return err
		}
	}
	var customize []func(*ctrl.Options)
	if c.ManagerOptions != nil {
		customize = append(customize, c.ManagerOptions)
	}
	mgr, err := o.NewManager(cfg, scheme, customize...)
	if err != nil {
		return err
	}
	if c.ServingCert != nil {
		*c.ServingCert = o.cert
	}
	log.Info("serving certificate", "source", o.cert.String())
	if c.Setup != nil {
		if err := c.Setup(ctx, mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", c.Name, err)
		}
	}
	return mgr.Start(ctx)
}
