package apply

// Writing objects: server-side apply in apply order (applyAll), with a wait for the bundle's
// CustomResourceDefinitions to be Established before the first object that may be of their kinds.

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyAll server-side applies objs in order, waiting for CRDs to be Established before the first
// object that is not a CRD. existing holds the objects as claim read them; others are read first.
// Every object is checked against req's collision policy right before it is written (applyOne).
func (e *Engine) applyAll(ctx context.Context, req Request, objs []*unstructured.Unstructured, existing map[ObjectKey]*unstructured.Unstructured) error {
	var crds []string
	waited := false
	for _, u := range objs {
		if !isCRD(u) && !waited && len(crds) > 0 {
			if err := e.waitEstablished(ctx, crds); err != nil {
				return err
			}
			waited = true
		}
		live, ok := existing[KeyOf(u)]
		if !ok && existing == nil {
			var err error
			if live, err = e.observe(ctx, u); err != nil {
				return err
			}
		}
		if err := e.applyOne(ctx, req.Name, req.CollisionPolicy, u, live); err != nil {
			return err
		}
		if isCRD(u) {
			crds = append(crds, u.GetName())
		}
	}
	if !waited && len(crds) > 0 {
		return e.waitEstablished(ctx, crds)
	}
	return nil
}

// waitEstablished waits until the CustomResourceDefinitions names are Established, at most
// CRDEstablishTimeout.
func (e *Engine) waitEstablished(ctx context.Context, names []string) error {
	timeout := e.CRDEstablishTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	var pending string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				pending = n + ": " + err.Error()
				return false, nil
			}
			if !CRDEstablished(crd) {
				pending = n
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s is not Established after %s (check its conditions with kubectl describe crd): %w", pending, timeout, err)
	}
	// New kinds are served now: let the RESTMapper learn them.
	return nil
}

// CRDEstablished reports whether crd has condition Established=True.
func CRDEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// isCRD reports whether u is a CustomResourceDefinition.
func isCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == apiextensionsv1.GroupName && gvk.Kind == "CustomResourceDefinition"
}
