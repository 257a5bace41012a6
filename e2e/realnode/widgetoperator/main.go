// Command widget-operator is a small real operator that the real-node e2e tier installs through OLM
// v1: a real kubelet runs it as a pod and the real kube-apiserver calls its webhooks.
//
// It owns the CRD widgets.widgets.olmv1.io (kind Widget, namespaced; v1, the storage version, with
// spec.size, and v2 with the same value as spec.replicas) and
//
//   - reconciles every Widget in every namespace, writing status.observedSize (= spec.size),
//     status.observedGeneration, status.phase "Reconciled", status.operatorVersion (the environment
//     variable WIDGET_OPERATOR_VERSION) and status.message;
//   - serves, over HTTPS on port 9443 with the certificate in
//     /tmp/k8s-webhook-server/serving-certs/{tls.crt,tls.key} (re-read within seconds when it is
//     rotated), a validating webhook at /validate-widget (spec.size must be 0 to 10), a mutating
//     webhook at /mutate-widget (label widgets.olmv1.io/defaulted=true, spec.size 1 when absent) and
//     the CRD conversion webhook at /convert (v1 spec.size <-> v2 spec.replicas);
//   - serves /healthz and /readyz on port 8081 (ready once the webhook server accepts TLS
//     connections). Metrics are off; there is no leader election.
//
// With WIDGET_REPORT_UPGRADEABLE=true and OPERATOR_CONDITION_NAME (set by OLM), it reports Upgradeable
// on that OperatorCondition (operators.coreos.com/v2, spec.conditions) as operator-lib's conditions
// package does: False with the message of WIDGET_HOLD_UPGRADES when that is set, else True
// (upgradeable.go).
//
// With WIDGET_CRASH=true it exits 1 at once, writing why to /dev/termination-log and stderr, so
// that tests can make a rollout fail and recover from it.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The operator's environment, set by the CSV's Deployment.
const (
	// VersionEnv is the operator's version, reported in status.operatorVersion.
	VersionEnv = "WIDGET_OPERATOR_VERSION"
	// CrashEnv set to "true" makes the operator exit 1 at start.
	CrashEnv = "WIDGET_CRASH"
	// CrashMessage is what a crash writes to the termination log and stderr.
	CrashMessage = "widget-operator: crashing because WIDGET_CRASH=true (unset it to recover)"
	// TerminationLog is the container's termination message path (the kubelet's default).
	TerminationLog = "/dev/termination-log"
)

// Where the operator listens and reads its serving certificate by default.
const (
	DefaultWebhookPort = 9443
	DefaultProbeAddr   = ":8081"
	DefaultCertDir     = "/tmp/k8s-webhook-server/serving-certs"
)

// certPollInterval is how often the serving certificate is re-read besides file events; kubelet
// replaces a Secret volume's files by swapping a symlink, which file events do not always show.
const certPollInterval = 2 * time.Second

func main() {
	if os.Getenv(CrashEnv) == "true" {
		crash()
	}
	var (
		webhookPort int
		probeAddr   string
		certDir     string
		verbosity   int
	)
	flag.IntVar(&webhookPort, "webhook-port", DefaultWebhookPort, "port of the HTTPS webhook server")
	flag.StringVar(&probeAddr, "health-probe-bind-address", DefaultProbeAddr, "address of /healthz and /readyz")
	flag.StringVar(&certDir, "cert-dir", DefaultCertDir, "directory holding the webhook server's tls.crt and tls.key")
	flag.IntVar(&verbosity, "v", 0, "log verbosity (1 logs every webhook call)")
	flag.Parse()

	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity))))
	log := ctrl.Log.WithName("widget-operator")
	if err := run(webhookPort, probeAddr, certDir); err != nil {
		log.Error(err, "widget-operator stopped")
		os.Exit(1)
	}
}

// crash writes CrashMessage to the termination log (when the kubelet provides one) and stderr,
// and exits 1.
func crash() {
	if f, err := os.OpenFile(TerminationLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		_, _ = f.WriteString(CrashMessage)
		_ = f.Close()
	}
	fmt.Fprintln(os.Stderr, CrashMessage)
	os.Exit(1)
}

func run(webhookPort int, probeAddr, certDir string) error {
	log := ctrl.Log.WithName("widget-operator")
	version := os.Getenv(VersionEnv)
	if version == "" {
		version = "unknown"
		log.Info("the environment variable is not set; reporting version unknown", "env", VersionEnv)
	}

	certPath, keyPath := filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key")
	certs, err := certwatcher.New(certPath, keyPath)
	if err != nil {
		return fmt.Errorf("loading the webhook serving certificate %s and key %s: %w (mount a kubernetes.io/tls Secret at %s; OLM v1 does so for bundles with webhookdefinitions)",
			certPath, keyPath, err, certDir)
	}
	certs = certs.WithWatchInterval(certPollInterval)
	certs.RegisterCallback(logCertificate) // also logs the certificate loaded now

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         false,
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		WebhookServer: webhook.NewServer(webhook.Options{
			Port:    webhookPort,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = certs.GetCertificate }},
		}),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.Add(certs); err != nil {
		return err
	}
	hooks := mgr.GetWebhookServer()
	hooks.Register(ValidatePath, validateHandler(log))
	hooks.Register(MutatePath, mutateHandler(log))
	hooks.Register(ConvertPath, convertHandler(log))

	if r := upgradeableReporter(mgr.GetAPIReader(), mgr.GetClient(), log); r != nil {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	if err := (&widgetReconciler{client: mgr.GetClient(), version: version}).setupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Widget controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", hooks.StartedChecker()); err != nil {
		return err
	}
	log.Info("starting", "version", version, "webhookPort", webhookPort, "probeAddr", probeAddr, "certDir", certDir)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// logCertificate logs which serving certificate is in use, so that tests can see a rotation.
func logCertificate(c tls.Certificate) {
	log := ctrl.Log.WithName("widget-operator")
	if len(c.Certificate) == 0 {
		return
	}
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		log.Error(err, "parsing the serving certificate")
		return
	}
	log.Info("serving certificate loaded", "serial", x.SerialNumber.String(), "notAfter", x.NotAfter.UTC().Format(time.RFC3339), "dnsNames", x.DNSNames)
}
