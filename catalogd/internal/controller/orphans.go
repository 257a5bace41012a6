package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
)

// orphanRemover deletes, once at start-up, the stored content of catalogs that no longer exist (for
// example a Catalog whose finalizer was removed by hand while catalogd was down). It runs on every
// replica: each has its own store.
type orphanRemover struct{ r *CatalogReconciler }

func (o orphanRemover) NeedLeaderElection() bool { return false }

func (o orphanRemover) Start(ctx context.Context) error {
	l := ctrl.LoggerFrom(ctx).WithName("orphans")
	// Snapshot the store before listing: content stored after the list (a Catalog created meanwhile)
	// is never considered.
	stored := o.r.Loader.Store.List()
	var list catalogdv1alpha1.CatalogList
	if err := o.r.Reader.List(ctx, &list); err != nil {
		l.Error(err, "listing Catalogs to find orphaned content; keeping all stored content")
		return nil
	}
	exists := map[string]bool{}
	for _, c := range list.Items {
		exists[c.Name] = true
	}
	for _, c := range stored {
		if cur, ok := o.r.Loader.Store.Get(c.Catalog); exists[c.Catalog] || !ok || cur != c {
			continue
		}
		if err := o.r.Loader.Remove(ctx, c.Catalog, nil); err != nil {
			l.Error(err, "removing orphaned content", "catalog", c.Catalog)
			continue
		}
		l.Info("removed the stored content of a catalog that no longer exists", "catalog", c.Catalog)
	}
	return nil
}
