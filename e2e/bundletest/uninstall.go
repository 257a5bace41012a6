package bundletest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What rukpak's uninstall does to the CRDs it keeps (rukpak/internal/apply: releaseCRD).
const (
	ownerNameLabel         = "core.rukpak.io/owner-name"
	releasedFromAnnotation = "core.rukpak.io/released-from"
)

// applyExample creates the alm-example ex, which the API server validates against the CRD's
// schema, then deletes it.
func (t *tester) applyExample(ctx context.Context, ex *unstructured.Unstructured, p *placement) (string, error) {
	u, where, err := t.createExample(ctx, ex, p)
	if err != nil {
		return "", err
	}
	if err := t.deleteExample(ctx, u); err != nil {
		return "", err
	}
	return fmt.Sprintf("the API server accepted %s %s (%s), validated against its CRD; deleted", u.GetAPIVersion(), u.GetName(), where), nil
}

// createExample creates the alm-example ex: a namespaced kind in the placement's examples
// namespace. It returns the created object and where it is.
func (t *tester) createExample(ctx context.Context, ex *unstructured.Unstructured, p *placement) (*unstructured.Unstructured, string, error) {
	u := ex.DeepCopy()
	gvk := u.GroupVersionKind()
	m, err := t.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, "", fmt.Errorf("alm-examples: the cluster does not serve %s %s after the install (%v): the example names a kind or version that no CRD of the bundle serves",
			u.GetAPIVersion(), u.GetKind(), err)
	}
	where := "cluster-scoped"
	if m.Scope.Name() == "namespace" {
		u.SetNamespace(p.examplesNS)
		where = "namespace " + p.examplesNS
	}
	if u.GetName() == "" && u.GetGenerateName() == "" {
		u.SetGenerateName("example-")
	}
	if err := t.createThroughWebhooks(ctx, u); err != nil {
		return nil, "", fmt.Errorf("alm-examples: the API server refused %s %s: %v\nfix: make the example valid for the CRD's schema in the CSV's metadata.annotations.alm-examples", u.GetKind(), exampleName(ex), err)
	}
	return u, where, nil
}

// webhookRouteWait bounds how long a create waits for the Service route to a webhook whose endpoint
// is already ready: kube-proxy programs a new ClusterIP a moment after the endpoint turns ready, and
// until then kube-apiserver's call is refused (or, with the packets dropped, its dial times out). A
// moment is a few seconds on an idle machine; on a loaded one (a CI run with two clusters on two
// cores) kube-proxy's sync can take much longer, hence a minute.
const webhookRouteWait = time.Minute

// createThroughWebhooks creates u, and retries, for at most webhookRouteWait, only while
// kube-apiserver cannot connect to one of the operator's webhooks (its pod already ready): that is the
// route being programmed, not an answer of the webhook. Any other error, an answer included, is final.
func (t *tester) createThroughWebhooks(ctx context.Context, u *unstructured.Unstructured) error {
	deadline := time.Now().Add(webhookRouteWait)
	for {
		// Each try sends the object as given (a refused Create may have filled in fields).
		try := u.DeepCopy()
		err := t.c.Create(ctx, try)
		if err == nil {
			try.DeepCopyInto(u)
			return nil
		}
		if !webhookUnreachable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// webhookUnreachable reports whether err is kube-apiserver failing to reach a webhook's Service: its
// connection refused, without a route, or its dial timed out (an answer, even a slow one, is not).
func webhookUnreachable(err error) bool {
	msg := err.Error()
	if !strings.Contains(msg, "failed calling webhook") {
		return false
	}
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "no route to host") ||
		(strings.Contains(msg, "dial tcp") && strings.Contains(msg, "i/o timeout"))
}

// deleteExample deletes the example u and waits until it is gone.
func (t *tester) deleteExample(ctx context.Context, u *unstructured.Unstructured) error {
	if err := t.c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting example %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := t.c.Get(ctx, objKey(u), u.DeepCopy())
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("example %s %s was created but is not gone 30s after its deletion (finalizers %v): nothing runs the operator to remove them on kwok",
			u.GetKind(), u.GetName(), u.GetFinalizers())
	}
	return nil
}

// uninstall deletes the Operator and checks that everything the bundle installed is gone except
// the CRDs: rukpak's uninstall (deletionPolicy Delete, no core.rukpak.io/delete-crds-on-uninstall)
// keeps them, released (owner labels removed, annotation core.rukpak.io/released-from), and with
// them every custom resource. The install namespace, created for the Operator, must be gone too.
func (t *tester) uninstall(ctx context.Context, p *placement) (string, error) {
	op := &unstructured.Unstructured{}
	op.SetGroupVersionKind(operatorGVK)
	op.SetName(p.name)
	if err := t.c.Delete(ctx, op); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("deleting Operator %s: %w", p.name, err)
	}
	bd := &unstructured.Unstructured{}
	bd.SetGroupVersionKind(bdGVK)
	bd.SetName(p.name)
	ns := &corev1.Namespace{}
	ns.SetName(p.name)
	var left []string
	start, said := time.Now(), time.Now()
	err := t.poll(ctx, func(ctx context.Context) (bool, error) {
		left = nil
		for _, o := range append([]client.Object{op, bd, ns}, nonCRDs(p)...) {
			if err := t.c.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); !apierrors.IsNotFound(err) {
				left = append(left, describeObject(o))
			}
		}
		if len(left) > 0 && time.Since(said) > 10*time.Second {
			said = time.Now()
			fmt.Fprintf(t.out, "    still waiting after %s for: %s\n", time.Since(start).Round(time.Second), strings.Join(left, ", "))
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return "", fmt.Errorf("%d object(s) left %s after deleting Operator %s: %s (BundleDeployment conditions: %s)",
			len(left), t.o.Timeout, p.name, strings.Join(left, ", "), oneLine(t.conditionsOf(ctx, bd)))
	}
	var kept []string
	for _, k := range sortedKeys(p.rendered) {
		o := p.rendered[k]
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := t.c.Get(ctx, objKey(o), live); err != nil {
			return "", fmt.Errorf("CRD %s is gone after uninstall, but rukpak keeps CRDs unless core.rukpak.io/delete-crds-on-uninstall is \"true\": %v", o.GetName(), err)
		}
		if live.GetLabels()[ownerNameLabel] == p.name {
			return "", fmt.Errorf("CRD %s is kept after uninstall but still labelled %s=%s: a later install would report a conflict", o.GetName(), ownerNameLabel, p.name)
		}
		kept = append(kept, fmt.Sprintf("%s (%s=%s)", o.GetName(), releasedFromAnnotation, live.GetAnnotations()[releasedFromAnnotation]))
	}
	for _, w := range p.watch {
		if w != p.name {
			_ = t.c.Delete(ctx, &corev1.Namespace{ObjectMeta: objMeta(w)})
		}
	}
	msg := fmt.Sprintf("Operator, BundleDeployment, namespace %s and %d installed object(s) removed", p.name, len(nonCRDs(p)))
	if len(kept) == 0 {
		return msg, nil
	}
	if err := t.deleteCRDs(ctx, p); err != nil {
		return "", err
	}
	return msg + fmt.Sprintf("; CRDs kept and released, as rukpak's uninstall does without core.rukpak.io/delete-crds-on-uninstall: %s (then deleted by the test, so that the next install starts without them)",
		strings.Join(kept, ", ")), nil
}

// deleteCRDs deletes the CRDs of p's rendered objects, which the uninstall kept, and waits until
// they are gone: every install of the test starts from a cluster without them, as a first install does.
func (t *tester) deleteCRDs(ctx context.Context, p *placement) error {
	var crds []*unstructured.Unstructured
	for _, k := range sortedKeys(p.rendered) {
		if o := p.rendered[k]; o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
			if err := t.c.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the kept CRD %s: %w", o.GetName(), err)
			}
		}
	}
	return t.poll(ctx, func(ctx context.Context) (bool, error) {
		for _, o := range crds {
			if err := t.c.Get(ctx, objKey(o), o.DeepCopy()); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

// conditionsOf returns the conditions of o as it is now, or why it cannot be read.
func (t *tester) conditionsOf(ctx context.Context, o *unstructured.Unstructured) string {
	got := o.DeepCopy()
	if err := t.c.Get(ctx, objKey(o), got); err != nil {
		return err.Error()
	}
	return describeConditions(got)
}

// nonCRDs are the rendered objects of p that uninstall deletes.
func nonCRDs(p *placement) []client.Object {
	var out []client.Object
	for _, k := range sortedKeys(p.rendered) {
		if o := p.rendered[k]; o.GetKind() != "CustomResourceDefinition" {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			live.SetName(o.GetName())
			live.SetNamespace(o.GetNamespace())
			out = append(out, live)
		}
	}
	return out
}

func describeObject(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", o)
		kind = kind[strings.LastIndex(kind, ".")+1:]
	}
	if o.GetNamespace() != "" {
		return fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName())
	}
	return kind + " " + o.GetName()
}

func objectKey(o *unstructured.Unstructured) string { return describeObject(o) }

func objKey(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }

func exampleName(u *unstructured.Unstructured) string {
	if u.GetName() != "" {
		return u.GetName()
	}
	return "(unnamed)"
}

func sortedKeys(m map[string]*unstructured.Unstructured) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func objMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
