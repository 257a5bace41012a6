package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	ctrlsource "sigs.k8s.io/controller-runtime/pkg/source"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// configMapSource watches the ConfigMaps of catalogd's namespace (only that namespace: a cache of
// its own, without managedFields) and enqueues the Catalogs whose ConfigMaps source names a
// ConfigMap that changed, so an edited ConfigMap is unpacked again.
func (r *CatalogReconciler) configMapSource(mgr ctrl.Manager) (ctrlsource.TypedSource[reconcile.Request], error) {
	nsCache, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{r.Loader.Namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(nsCache); err != nil {
		return nil, err
	}
	return ctrlsource.Kind(nsCache, &corev1.ConfigMap{},
		handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, cm *corev1.ConfigMap) []reconcile.Request {
			return r.catalogsUsingConfigMap(ctx, cm.Name)
		})), nil
}

func (r *CatalogReconciler) catalogsUsingConfigMap(ctx context.Context, name string) []reconcile.Request {
	var list catalogdv1alpha1.CatalogList
	if err := r.Client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing Catalogs for a ConfigMap change", "configMap", name)
		return nil
	}
	var out []reconcile.Request
	for _, c := range list.Items {
		if usesConfigMap(c.Spec.Source, name) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: c.Name}})
		}
	}
	return out
}

func usesConfigMap(src rukpakv1alpha1.Source, name string) bool {
	if src.Type != rukpakv1alpha1.SourceTypeConfigMaps {
		return false
	}
	for _, cm := range src.ConfigMaps {
		if cm.ConfigMap.Name == name {
			return true
		}
	}
	return false
}
