// Package health decides whether the objects a BundleDeployment applied are ready: Deployments
// Available (and rolled out), StatefulSets and DaemonSets with every replica ready and updated, CRDs
// Established, and the Services that its webhooks call with a ready endpoint. Other kinds are healthy
// once they exist.
package health

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Check reads each object in objs (as the engine applied them) through reader and returns nil when
// all are healthy, else an error naming the first one that is not and why. When endpoints is not nil,
// the Services that the bundle's webhooks (admission and CRD conversion) call must also have a ready
// endpoint; endpoints must read EndpointSlices, which rukpak does not label, so it is not the
// label-scoped cache.
func Check(ctx context.Context, reader, endpoints client.Reader, objs []*unstructured.Unstructured) error {
	if err := checkObjects(ctx, reader, objs); err != nil {
		return err
	}
	if endpoints == nil {
		return nil
	}
	for _, svc := range WebhookServices(objs) {
		if err := checkEndpoints(ctx, endpoints, svc); err != nil {
			return err
		}
	}
	return nil
}

func checkObjects(ctx context.Context, reader client.Reader, objs []*unstructured.Unstructured) error {
	for _, want := range objs {
		if !watched(want) {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(want.GroupVersionKind())
		if err := reader.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s not found", want.GetKind(), name(want))
			}
			return fmt.Errorf("reading %s %s: %w", want.GetKind(), name(want), err)
		}
		if ok, why := Evaluate(live); !ok {
			return fmt.Errorf("%s %s is not ready: %s", live.GetKind(), name(live), why)
		}
	}
	return nil
}

func watched(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet"):
		return true
	case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		return true
	}
	return false
}

func name(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetName()
}

// Evaluate is the pure health rule for one live object: ok, or why not.
func Evaluate(u *unstructured.Unstructured) (bool, string) {
	gen := u.GetGeneration()
	observed, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	kind := u.GetKind()
	if kind != "CustomResourceDefinition" && (!found || observed < gen) {
		return false, fmt.Sprintf("the controller has not observed generation %d yet", gen)
	}
	switch kind {
	case "Deployment":
		cond, msg := condition(u, "Available")
		if cond != "True" {
			if msg == "" {
				msg = "condition Available is not True"
			}
			return false, "not Available: " + msg
		}
		want := int64(1)
		if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
			want = r
		}
		updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		if updated < want {
			return false, fmt.Sprintf("rollout in progress: %d of %d replicas updated", updated, want)
		}
		return true, ""
	case "StatefulSet":
		want := int64(1)
		if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
			want = r
		}
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		if ready < want || updated < want {
			return false, fmt.Sprintf("%d of %d replicas ready, %d updated", ready, want, updated)
		}
		return true, ""
	case "DaemonSet":
		desired, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredNumberScheduled")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "numberReady")
		updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedNumberScheduled")
		if ready < desired || updated < desired {
			return false, fmt.Sprintf("%d of %d pods ready, %d updated", ready, desired, updated)
		}
		return true, ""
	case "CustomResourceDefinition":
		cond, msg := condition(u, "Established")
		if cond != "True" {
			return false, "not Established: " + msg
		}
		return true, ""
	}
	return true, ""
}

func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		return s, msg
	}
	return "", ""
}

// ServiceRef names a Service a webhook calls.
type ServiceRef struct{ Namespace, Name, Caller string }

// WebhookServices lists, in order and without repeats, the Services called by the admission webhooks
// and CRD conversion webhooks among objs.
func WebhookServices(objs []*unstructured.Unstructured) []ServiceRef {
	var out []ServiceRef
	seen := map[ServiceRef]bool{}
	add := func(clientConfig map[string]interface{}, caller string) {
		ns, _, _ := unstructured.NestedString(clientConfig, "service", "namespace")
		name, _, _ := unstructured.NestedString(clientConfig, "service", "name")
		if name == "" {
			return
		}
		ref := ServiceRef{Namespace: ns, Name: name}
		if !seen[ref] {
			seen[ref] = true
			ref.Caller = caller
			out = append(out, ref)
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				if m, ok := h.(map[string]interface{}); ok {
					cc, _, _ := unstructured.NestedMap(m, "clientConfig")
					add(cc, u.GetKind()+" "+u.GetName())
				}
			}
		case "CustomResourceDefinition":
			cc, _, _ := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig")
			add(cc, "the conversion webhook of CustomResourceDefinition "+u.GetName())
		}
	}
	return out
}

func checkEndpoints(ctx context.Context, reader client.Reader, svc ServiceRef) error {
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return fmt.Errorf("listing the endpoints of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return nil
			}
		}
	}
	return fmt.Errorf("Service %s/%s, called by %s, has no ready endpoint (check that its selector matches the pods of a ready Deployment)",
		svc.Namespace, svc.Name, svc.Caller)
}
