// Package boot holds what the three OLM v1 controller binaries share at start-up: the common flags
// (kubeconfig, metrics, probes, leader election, log level, TLS profile), the one serving-certificate
// loader of every TLS server (servingcert.go), a manager whose metrics endpoint is served over HTTPS
// behind Kubernetes authentication and authorization, and waiting for CRDs to be Established.
package boot

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Options are the flags every controller binary accepts.
type Options struct {
	Component          string
	Kubeconfig         string
	MetricsBindAddress string
	// CertDir (--tls-cert-dir) holds tls.crt and tls.key, the serving certificate of every TLS server
	// of the component (servingcert.go); empty generates one in memory.
	CertDir string
	// ServingCertHosts are extra DNS names and IPs of a generated certificate (the component name,
	// localhost and the loopback addresses are always in it).
	ServingCertHosts []string
	// MetricsCertDir (--metrics-cert-dir, deprecated) gives the metrics endpoint a certificate of its
	// own instead of CertDir's.
	MetricsCertDir          string
	HealthProbeBindAddress  string
	LeaderElect             bool
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election: a standby takes over at most
	// about LeaseDuration + 2 × RetryPeriod × 2.2 after the leader dies.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	LogLevel                                  string
	CRDWaitTimeout                            time.Duration
	// PprofBindAddress serves net/http/pprof there ("0" or empty: not at all).
	PprofBindAddress string
	// TLS selects the TLS profile of the metrics endpoint and of the component's own TLS servers and
	// clients (tlsprofile.go).
	TLS TLSFlags

	// cert is the component's serving certificate, once built (servingCert).
	cert *ServingCert
}

// BindFlags registers the common flags on fs with defaults for component.
func (o *Options) BindFlags(fs *flag.FlagSet, component string, defaultMetricsPort, defaultProbePort int) {
	o.Component = component
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty means in-cluster configuration or $KUBECONFIG")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", defaultMetricsPort),
		"address of the HTTPS metrics endpoint (authenticated and authorized through the Kubernetes API); \"0\" disables it")
	fs.StringVar(&o.CertDir, "tls-cert-dir", "",
		"directory with tls.crt and tls.key (a kubernetes.io/tls Secret volume): the serving certificate of every TLS server of the component (metrics; catalogd's content endpoint and CatalogMetadata API), reloaded when it changes; empty generates a CA and a certificate in memory at start-up")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "",
		"deprecated, use --tls-cert-dir: directory with tls.crt and tls.key for the metrics endpoint only")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", defaultProbePort),
		"address of the /healthz and /readyz endpoints; \"0\" disables them")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "enable leader election so that only one replica reconciles")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "olmv1-system", "namespace of the leader election Lease")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second,
		"how long a standby waits after the leader's last renewal before taking over (a standby takes over at most about this plus 2 × 2.2 × the retry period after the leader dies)")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"how long the leader keeps trying to renew before it gives up leadership (and exits); must be less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often replicas try to acquire or renew the Lease")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log verbosity: debug, info, error, or a number (higher is more verbose)")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", "0", "address of the net/http/pprof endpoints (e.g. 127.0.0.1:6060); 0 disables them")
	fs.DurationVar(&o.CRDWaitTimeout, "crd-wait-timeout", 2*time.Minute, "how long to wait at start-up for this component's CRDs to be Established")
	o.TLS.Bind(fs)
}

// SetupLogging installs the structured (JSON) logger at the level selected by --log-level.
func (o *Options) SetupLogging() error {
	level, err := parseLevel(o.LogLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.Level(level), zap.JSONEncoder()))
	return nil
}

func parseLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info", "":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--log-level %q: use debug, info, error or a verbosity number ≥ 0", s)
	}
	// logr verbosity V(n) is zap level -n.
	return zapcore.Level(-n), nil
}

// RESTConfig loads --kubeconfig, else $KUBECONFIG, else the in-cluster configuration.
func (o *Options) RESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes client configuration (set --kubeconfig or KUBECONFIG): %w", err)
	}
	cfg.UserAgent = o.Component
	return cfg, nil
}

// NewManager creates a controller-runtime manager with HTTPS metrics behind authn/authz, health and
// readiness probes, and optional leader election.
// Each of customize may adjust the manager options (e.g. scope the cache) before it is created.
func (o *Options) NewManager(cfg *rest.Config, scheme *runtime.Scheme, customize ...func(*ctrl.Options)) (ctrl.Manager, error) {
	metrics, own, err := o.metricsOptions()
	if err != nil {
		return nil, err
	}
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.Component + ".olmv1.operatorframework.io",
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		PprofBindAddress:        o.PprofBindAddress,
	}
	if o.LeaseDuration > 0 {
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &o.LeaseDuration, &o.RenewDeadline, &o.RetryPeriod
		if o.RenewDeadline <= 0 || o.RetryPeriod <= 0 || o.RenewDeadline >= o.LeaseDuration {
			return nil, fmt.Errorf("--leader-election-renew-deadline (%s) must be positive and less than --leader-election-lease-duration (%s), and --leader-election-retry-period (%s) positive",
				o.RenewDeadline, o.LeaseDuration, o.RetryPeriod)
		}
	}
	for _, c := range customize {
		c(&opts)
	}
	if _, err := o.servingCert(); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the %s manager: %w", o.Component, err)
	}
	// Every replica reloads its certificates, leader or not; a certificate that cannot be loaded makes
	// the replica not ready, with the reason.
	if o.cert != nil {
		if err := AddServingCert(mgr, "serving-cert", o.cert); err != nil {
			return nil, err
		}
	}
	if own != nil {
		if err := AddServingCert(mgr, "metrics-cert", own); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// AddServingCert runs cert's reloading on every replica of mgr and adds its readiness check named
// check (e.g. "serving-cert").
func AddServingCert(mgr ctrl.Manager, check string, cert *ServingCert) error {
	if err := mgr.Add(cert); err != nil {
		return err
	}
	return mgr.AddReadyzCheck(check, cert.Ready)
}
