package bundletest

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// upgradeOperator is the Operator (and install namespace) of the upgrade steps.
const upgradeOperator = "bundle-test-upgrade"

// upgrade installs the previous version, moves the Operator to the bundle's version and uninstalls
// it. It uses the first tested install mode that the previous version supports too.
func (t *tester) upgrade(ctx context.Context, modes []string) {
	name := fmt.Sprintf("upgrade %s -> %s", t.prev.Version, t.bundle.Version)
	mode := ""
	for _, m := range modes {
		if contains(t.prev.InstallModes, m) {
			mode = m
			break
		}
	}
	if mode == "" {
		t.fail(name, fmt.Errorf("the previous version %s supports none of the tested install modes %s (it supports %s)",
			t.prev.Version, strings.Join(modes, ","), strings.Join(t.prev.InstallModes, ",")))
		return
	}
	p := newPlacement(mode, upgradeOperator)
	var crs []*unstructured.Unstructured
	switch {
	case !t.step(fmt.Sprintf("install previous %s (%s)", t.prev.Version, mode), func() (string, error) { return t.install(ctx, p, t.prev) }):
		t.skip(name, "the previous version did not install")
	case len(t.prev.Examples) > 0 && !t.step(fmt.Sprintf("create examples of %s", t.prev.Version), func() (msg string, err error) {
		crs, msg, err = t.createPrevExamples(ctx, p)
		return msg, err
	}):
		t.skip(name, "the previous version's examples were refused")
	default:
		t.step(name, func() (string, error) { return t.upgradeTo(ctx, p, len(crs)) })
	}
	if err := t.deleteKeptExamples(ctx, crs); err != nil {
		t.fail("uninstall after upgrade", err)
		return
	}
	t.step("uninstall after upgrade", func() (string, error) { return t.uninstall(ctx, p) })
}

// deleteKeptExamples deletes the custom resources kept through the upgrade, and waits until they are
// gone, before the uninstall removes the operator. A delete (and a read) of a custom resource whose
// CRD converts through the operator's webhook needs that webhook: right after the upgrade the
// Service may still route to the old pod for a while (kube-proxy's sync on a loaded machine took
// over 30 s in a CI run), so each one is retried until it is gone, for at most --timeout. Uninstalling
// with them still there would delete the webhook's Service while the namespace being deleted holds
// objects nothing can decode any more: the namespace stays Terminating for good.
func (t *tester) deleteKeptExamples(ctx context.Context, crs []*unstructured.Unstructured) error {
	for _, u := range crs {
		var last error
		err := t.poll(ctx, func(ctx context.Context) (bool, error) {
			last = t.c.Delete(ctx, u)
			if last != nil && !apierrors.IsNotFound(last) {
				return false, nil
			}
			last = t.c.Get(ctx, objKey(u), u.DeepCopy())
			return apierrors.IsNotFound(last), nil
		})
		if err != nil {
			return fmt.Errorf("example %s %s, kept through the upgrade, is not gone %s after its deletion (last: %v; finalizers %v): uninstalling now would leave namespace %s Terminating, since nothing could convert it once the operator's webhook is removed",
				u.GetKind(), u.GetName(), t.o.Timeout, last, u.GetFinalizers(), u.GetNamespace())
		}
	}
	return nil
}

// createPrevExamples creates the previous version's alm-examples and keeps them: the custom
// resources that rukpak's CRD upgrade-safety check must find still valid under the new CRDs.
func (t *tester) createPrevExamples(ctx context.Context, p *placement) ([]*unstructured.Unstructured, string, error) {
	var crs []*unstructured.Unstructured
	var names []string
	for _, ex := range t.prev.Examples {
		u, _, err := t.createExample(ctx, ex, p)
		if err != nil {
			return crs, "", err
		}
		crs = append(crs, u)
		names = append(names, u.GetKind()+" "+u.GetName())
	}
	return crs, fmt.Sprintf("created %s in namespace %s, kept through the upgrade", strings.Join(names, ", "), p.examplesNS), nil
}

// upgradeTo sets the Operator's version to the bundle's and waits until the bundle is installed and
// healthy: resolution followed the catalog's edge (upgradeConstraintPolicy Enforce) and rukpak's CRD
// upgrade-safety check accepted the new CRDs with the existing custom resources.
func (t *tester) upgradeTo(ctx context.Context, p *placement, existing int) (string, error) {
	if err := t.render(ctx, p, t.bundle); err != nil {
		return "", err
	}
	op := &unstructured.Unstructured{}
	op.SetGroupVersionKind(operatorGVK)
	op.SetName(p.name)
	patch := fmt.Sprintf(`{"spec":{"version":%q}}`, t.bundle.Version)
	if err := t.c.Patch(ctx, op, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return "", fmt.Errorf("setting Operator %s spec.version to %s: %w", p.name, t.bundle.Version, err)
	}
	got, err := t.waitInstalled(ctx, p.name, t.bundle.Version)
	if err != nil {
		return "", err
	}
	name, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "name")
	if name != t.bundle.Name {
		return "", fmt.Errorf("Operator %s reports bundle %s installed, want %s", p.name, name, t.bundle.Name)
	}
	var crds []string
	for _, k := range sortedKeys(p.rendered) {
		if o := p.rendered[k]; o.GetKind() == "CustomResourceDefinition" && contains(t.bundle.CRDs, o.GetName()) {
			if err := t.checkCRDServes(ctx, o); err != nil {
				return "", err
			}
			crds = append(crds, o.GetName())
		}
	}
	msg := fmt.Sprintf("Operator %s upgraded %s -> %s along the catalog's edge (%s replaces %s, upgradeConstraintPolicy Enforce)",
		p.name, t.prev.Name, t.bundle.Name, t.bundle.Name, t.prev.Name)
	if len(crds) > 0 {
		msg += fmt.Sprintf("; rukpak's CRD upgrade-safety check accepted %s with %d existing custom resource(s)", strings.Join(crds, ", "), existing)
	}
	return msg + "; " + installedHealthy(got), nil
}

// checkCRDServes checks that the live CRD serves every version the bundle's CRD o serves: the new
// CRD was applied.
func (t *tester) checkCRDServes(ctx context.Context, o *unstructured.Unstructured) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	if err := t.c.Get(ctx, objKey(o), live); err != nil {
		return fmt.Errorf("reading CRD %s after the upgrade: %w", o.GetName(), err)
	}
	served := func(u *unstructured.Unstructured) []string {
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		var out []string
		for _, v := range vs {
			if m, ok := v.(map[string]any); ok && m["served"] == true {
				out = append(out, fmt.Sprint(m["name"]))
			}
		}
		return out
	}
	have := served(live)
	for _, v := range served(o) {
		if !contains(have, v) {
			return fmt.Errorf("after the upgrade CRD %s serves %v, but the new bundle's CRD serves %s too: the new CRD was not applied", o.GetName(), have, v)
		}
	}
	return nil
}
