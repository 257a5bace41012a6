// Package rukpaktest builds what rukpak's integration test packages run against their envtest API
// server: a manager as rukpak's (its cache options, no metrics or probe listeners) and a
// BundleDeploymentReconciler of plain bundles storing its release history in Secrets, for each
// package to set the fields it tests before SetupWithManager.
package rukpaktest

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// NewManager returns a manager of cfg with rukpak's cache options and no listeners.
func NewManager(cfg *rest.Config, scheme *runtime.Scheme) (ctrl.Manager, error) {
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A test binary may start several managers, each with its bundledeployment controller.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
}

// PlainReconciler returns a BundleDeploymentReconciler of mgr that unpacks with unpacker, renders
// plain bundles, applies with k8s and keeps 10 revisions of release history in Secrets of
// namespace, its system namespace.
func PlainReconciler(mgr ctrl.Manager, k8s client.Client, unpacker source.Unpacker, namespace string) *controller.BundleDeploymentReconciler {
	return &controller.BundleDeploymentReconciler{
		Client:    mgr.GetClient(),
		Unpacker:  unpacker,
		Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{rukpakv1alpha1.ProvisionerPlain: plain.New()},
		Engine: &apply.Engine{Client: k8s, Scheme: mgr.GetScheme(),
			Storage: apply.NewSecretsStorage(kubernetes.NewForConfigOrDie(mgr.GetConfig()), namespace, 10)},
		Namespace: namespace,
	}
}

// Start runs mgr until stop is called; stop waits for the manager to end and returns its error.
func Start(mgr ctrl.Manager) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}
