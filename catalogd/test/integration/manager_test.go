package integration

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/controller"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// startCatalogManager runs catalogd's Catalog reconciler, with unpacker and store, on the Catalogs
// labelled label=true, until the test ends; Secrets and ConfigMaps are read from namespace. It
// returns the URL of an HTTP server serving the store. Catalogs a test creates after this call
// must be deleted in a t.Cleanup registered after it, so that the reconciler removes their
// finalizer before it stops.
func startCatalogManager(t *testing.T, label string, unpacker source.Unpacker, store *storage.Store, namespace string) string {
	t.Helper()
	content := httptest.NewServer(&serve.Handler{Store: store})
	t.Cleanup(content.Close)
	mgr, err := ctrl.NewManager(suite.Config, ctrl.Options{
		Scheme:  suite.Client.Scheme(),
		Logger:  logr.Discard(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The controller is named "catalog" in every test (and every run of go test -count=2).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&catalogdv1alpha1.Catalog{}: {Label: labels.SelectorFromSet(labels.Set{label: "true"})},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &controller.CatalogReconciler{Client: mgr.GetClient(), Loader: replica.NewLoader(unpacker, store, namespace), ContentBaseURL: content.URL}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return content.URL
}
