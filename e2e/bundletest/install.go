package bundletest

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

var (
	operatorGVK = schema.GroupVersionKind{Group: "operators.operatorframework.io", Version: "v1alpha1", Kind: "Operator"}
	bdGVK       = rukpakv1alpha1.GroupVersion.WithKind("BundleDeployment")
)

// placement is where one install puts the operator. The Operator, its BundleDeployment and its
// install namespace all have the same name.
type placement struct {
	mode, name string
	// watch is spec.watchNamespaces (empty for AllNamespaces); examplesNS is where namespaced
	// examples are created: the first watched namespace, else the install namespace.
	watch      []string
	examplesNS string
	// rendered are the objects the installs rendered to, by key (what uninstall must remove).
	rendered map[string]*unstructured.Unstructured
}

func newPlacement(mode, name string) *placement {
	p := &placement{mode: mode, name: name, examplesNS: name, rendered: map[string]*unstructured.Unstructured{}}
	switch mode {
	case OwnNamespace:
		p.watch = []string{name}
	case SingleNamespace:
		p.watch = []string{name + "-watched"}
	case MultiNamespace:
		p.watch = []string{name + "-watched-a", name + "-watched-b"}
	}
	if len(p.watch) > 0 {
		p.examplesNS = p.watch[0]
	}
	return p
}

// installMode installs the bundle in mode, applies its examples and uninstalls it.
func (t *tester) installMode(ctx context.Context, mode string) {
	p := newPlacement(mode, "bundle-test-"+strings.ToLower(mode))
	installed := t.step("install "+mode, func() (string, error) { return t.install(ctx, p, t.bundle) })
	switch {
	case !installed:
		t.skip("examples "+mode, "not installed")
	case len(t.bundle.Examples) == 0:
		t.skip("examples "+mode, "the CSV has no alm-examples annotation")
	default:
		for _, ex := range t.bundle.Examples {
			t.step(fmt.Sprintf("example %s %s (%s)", ex.GetKind(), exampleName(ex), mode), func() (string, error) { return t.applyExample(ctx, ex, p) })
		}
	}
	t.step("uninstall "+mode, func() (string, error) { return t.uninstall(ctx, p) })
}

// install creates the watched namespaces and an Operator pinned to s's version, and waits until it
// is Installed and Healthy with every object the bundle renders to present.
func (t *tester) install(ctx context.Context, p *placement, s *source) (string, error) {
	if err := t.render(ctx, p, s); err != nil {
		return "", err
	}
	for _, ns := range p.watch {
		if ns == p.name {
			continue
		}
		if err := t.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating watched namespace %s: %w", ns, err)
		}
	}
	spec := map[string]any{"packageName": s.Package, "version": s.Version, "installNamespace": p.name}
	if len(p.watch) > 0 {
		spec["watchNamespaces"] = toAny(p.watch)
	}
	op := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": p.name}, "spec": spec}}
	op.SetGroupVersionKind(operatorGVK)
	if err := t.c.Create(ctx, op); err != nil {
		return "", fmt.Errorf("creating Operator %s: %w", p.name, err)
	}
	got, err := t.waitInstalled(ctx, p.name, s.Version)
	if err != nil {
		return "", err
	}
	missing, counts := t.present(ctx, p)
	if len(missing) > 0 {
		return "", fmt.Errorf("Operator %s is Installed, but %d object(s) the bundle renders to are missing: %s", p.name, len(missing), strings.Join(missing, ", "))
	}
	return fmt.Sprintf("Operator %s installed %s in namespace %s (watching %s); %s\nall %d rendered objects present: %s",
		p.name, s.Name, p.name, watching(p), installedHealthy(got), len(p.rendered), counts), nil
}

// render renders s as rukpak will for the placement's BundleDeployment and adds the objects to
// p.rendered.
func (t *tester) render(ctx context.Context, p *placement, s *source) error {
	var cfg *rukpakv1alpha1.BundleConfig
	if len(p.watch) > 0 {
		cfg = &rukpakv1alpha1.BundleConfig{WatchNamespaces: p.watch}
	}
	// With real pods rukpak runs from the chart (tls.mode selfSigned), whose webhook certificates come
	// from rukpak's self-signed provider; the simulated environment's rukpak renders the default.
	certProvider := ""
	if t.realPods {
		certProvider = "selfSigned"
	}
	res, err := bundlerender.Render(ctx, s.Dir, bundlerender.Options{Name: p.name, InstallNamespace: p.name, Config: cfg,
		Cluster: &bundlerender.Cluster{Mapper: t.c.RESTMapper()}, CertProvider: certProvider})
	if err != nil {
		return fmt.Errorf("rendering %s in %s mode (kubectl olmv1 bundle render): %w", s.Arg, p.mode, err)
	}
	for _, o := range res.Objects {
		p.rendered[objectKey(o)] = o
	}
	return nil
}

// present returns the rendered objects that do not exist, and a count of those that do by kind.
func (t *tester) present(ctx context.Context, p *placement) (missing []string, counts string) {
	byKind := map[string]int{}
	var kinds []string
	for _, k := range sortedKeys(p.rendered) {
		o := p.rendered[k]
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := t.c.Get(ctx, objKey(o), live); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", k, err))
			continue
		}
		if byKind[o.GetKind()] == 0 {
			kinds = append(kinds, o.GetKind())
		}
		byKind[o.GetKind()]++
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", byKind[k], k))
	}
	return missing, strings.Join(parts, ", ")
}

// waitInstalled waits until Operator name is Installed and Healthy for its generation with version
// installed. It gives up early when rukpak refuses the revision (UpgradeBlocked).
func (t *tester) waitInstalled(ctx context.Context, name, version string) (*unstructured.Unstructured, error) {
	var last *unstructured.Unstructured
	var blocked string
	err := t.poll(ctx, func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(operatorGVK)
		if err := t.c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, nil //nolint:nilerr // retried until the timeout
		}
		last = got
		inst, healthy := findCondition(got, "Installed"), findCondition(got, "Healthy")
		if inst == nil || healthy == nil || inst.ObservedGeneration != got.GetGeneration() {
			return false, nil
		}
		if inst.Status == metav1.ConditionFalse && inst.Reason == "UpgradeBlocked" {
			blocked = inst.Message
			return false, fmt.Errorf("blocked")
		}
		v, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
		return inst.Status == metav1.ConditionTrue && healthy.Status == metav1.ConditionTrue && v == version, nil
	})
	switch {
	case blocked != "":
		return last, fmt.Errorf("rukpak refused to apply version %s (Installed=False, reason UpgradeBlocked): %s", version, blocked)
	case err != nil && last == nil:
		return nil, fmt.Errorf("Operator %s could not be read within %s: %w", name, t.o.Timeout, err)
	case err != nil:
		v, _, _ := unstructured.NestedString(last.Object, "status", "installedBundle", "version")
		return last, fmt.Errorf("Operator %s did not become Installed and Healthy with version %s within %s (installed version: %q); its conditions:\n%s",
			name, version, t.o.Timeout, v, describeConditions(last))
	}
	return last, nil
}

func watching(p *placement) string {
	if len(p.watch) == 0 {
		return "all namespaces"
	}
	return strings.Join(p.watch, ",")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// installedHealthy describes the Installed and Healthy conditions of a passing Operator.
func installedHealthy(op *unstructured.Unstructured) string {
	var parts []string
	for _, typ := range []string{"Installed", "Healthy"} {
		if c := findCondition(op, typ); c != nil {
			parts = append(parts, fmt.Sprintf("%s=%s: %s", typ, c.Status, c.Message))
		}
	}
	return strings.Join(parts, "; ")
}
