package apply

// Preparing rendered objects for apply (Prepare): unstructured, owner-labelled, namespaced by
// their kind's scope, in apply order.

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scope reports whether objects of a kind the bundle does not define itself are namespaced.
type Scope func(gvk schema.GroupVersionKind) (namespaced bool, err error)

// mapperScope answers from the API server's kinds (the client's RESTMapper).
func (e *Engine) mapperScope(gvk schema.GroupVersionKind) (bool, error) {
	m, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("a kind the API server does not serve (%v): install the CRD that defines %s first or remove the object", err, gvk.GroupVersion())
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Prepare turns rendered objects into exactly what the engine applies: unstructured copies with
// cluster-assigned fields removed and the owner labels of BundleDeployment owner added, namespaced
// objects without a namespace put into namespace (kinds defined by a CRD of the same bundle take
// their scope from it, others from scope), in apply order.
func Prepare(scheme *runtime.Scheme, owner, namespace string, objects []client.Object, scope Scope) ([]*unstructured.Unstructured, error) {
	objs, err := toUnstructured(scheme, owner, objects)
	if err != nil {
		return nil, err
	}
	if err := defaultNamespaces(objs, namespace, scope); err != nil {
		return nil, err
	}
	applyOrder(objs)
	return objs, nil
}

// defaultNamespaces puts namespaced objects without a namespace into ns. Kinds defined by a CRD of
// the same bundle take their scope from it; others from scope.
func defaultNamespaces(objs []*unstructured.Unstructured, ns string, scope Scope) error {
	bundled := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if isCRD(u) {
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			s, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			bundled[schema.GroupKind{Group: group, Kind: kind}] = s == string(apiextensionsv1.NamespaceScoped)
		}
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		namespaced, ok := bundled[gvk.GroupKind()]
		if !ok {
			var err error
			if namespaced, err = scope(gvk); err != nil {
				return fmt.Errorf("the bundle contains %s, %w", KeyOf(u), err)
			}
		}
		switch {
		case namespaced && u.GetNamespace() == "":
			u.SetNamespace(ns)
		case !namespaced && u.GetNamespace() != "":
			u.SetNamespace("")
		}
	}
	return nil
}
