package bundletest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// CatalogName is the Catalog the test creates.
const CatalogName = "bundle-test"

// buildCatalog writes the test's file-based catalog with `kubectl-olmv1 catalog add-bundle` (the
// previous bundle, then the bundle under test, which thereby replaces it), pushes it and waits until
// catalogd serves it.
func (t *tester) buildCatalog(ctx context.Context) (string, error) {
	dir := filepath.Join(t.work, "catalog")
	if t.catalog != nil {
		if err := t.catalog.write(dir); err != nil {
			return "", err
		}
	}
	var lines []string
	if t.prev != nil && t.catalog == nil {
		out, err := t.addBundle(ctx, dir, t.prev)
		if err != nil {
			return "", err
		}
		lines = append(lines, out)
	}
	out, err := t.addBundle(ctx, dir, t.bundle)
	if err != nil {
		return "", err
	}
	lines = append(lines, out)
	if t.prev != nil && !strings.Contains(out, "replaces "+t.prev.Name) {
		return "", fmt.Errorf("catalog add-bundle did not make %s replace %s, so there is no upgrade edge to test:\n%s", t.bundle.Name, t.prev.Name, strings.Join(lines, "\n"))
	}
	if err := t.clusterRefs(dir); err != nil {
		return "", err
	}
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		return "", fmt.Errorf("building the catalog image of %s: %w", dir, err)
	}
	ref := t.env.Registry.Addr + "/bundle-test/catalog:latest"
	if _, err := imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure()); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	if err := t.serveCatalog(ctx, t.clusterRef(ref)); err != nil {
		return "", err
	}
	lines = append(lines, fmt.Sprintf("catalog %s served by Catalog %s", t.clusterRef(ref), CatalogName))
	return strings.Join(lines, "\n"), nil
}

// addBundle runs `kubectl-olmv1 catalog add-bundle dir <s.Ref> --insecure` and returns its output.
func (t *tester) addBundle(ctx context.Context, dir string, s *source) (string, error) {
	bin, err := findCLI(t.o.BinDir)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, "catalog", "add-bundle", dir, s.Ref, "--insecure")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl olmv1 catalog add-bundle %s %s: %w\n%s", dir, s.Ref, err, strings.TrimSpace(out.String()))
	}
	return "$ kubectl olmv1 catalog add-bundle " + s.Ref + "\n" + strings.TrimSpace(out.String()), nil
}

// findCLI finds kubectl-olmv1: in binDir, else on PATH.
func findCLI(binDir string) (string, error) {
	p := filepath.Join(binDir, "kubectl-olmv1")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath("kubectl-olmv1"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("kubectl-olmv1 is neither in %s nor on PATH: run `make build`", binDir)
}

// serveCatalog creates the Catalog on ref and waits until it is Serving.
func (t *tester) serveCatalog(ctx context.Context, ref string) error {
	cat := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
		"metadata": map[string]any{"name": CatalogName},
		"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
	}}
	if err := t.c.Create(ctx, cat); err != nil {
		return fmt.Errorf("creating Catalog %s: %w", CatalogName, err)
	}
	var last *unstructured.Unstructured
	err := t.poll(ctx, func(ctx context.Context) (bool, error) {
		got := cat.DeepCopy()
		if err := t.c.Get(ctx, objKey(cat), got); err != nil {
			return false, nil //nolint:nilerr // not there yet
		}
		last = got
		return conditionStatus(got, "Serving") == "True", nil
	})
	if err != nil {
		return fmt.Errorf("Catalog %s did not become Serving within %s: %s", CatalogName, t.o.Timeout, describeConditions(last))
	}
	return nil
}

// poll runs cond every 500ms until it is true, fails, or the step timeout passes.
func (t *tester) poll(ctx context.Context, cond func(ctx context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, t.o.Timeout, true, cond)
}

// conditionStatus returns the status of the condition typ of u, "" when it has none.
func conditionStatus(u *unstructured.Unstructured, typ string) string {
	if c := findCondition(u, typ); c != nil {
		return string(c.Status)
	}
	return ""
}

func findCondition(u *unstructured.Unstructured, typ string) *metav1.Condition {
	if u == nil {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		out := &metav1.Condition{Type: typ}
		status, _ := m["status"].(string)
		out.Status = metav1.ConditionStatus(status)
		out.Reason, _ = m["reason"].(string)
		out.Message, _ = m["message"].(string)
		if g, ok := m["observedGeneration"].(int64); ok {
			out.ObservedGeneration = g
		}
		return out
	}
	return nil
}

// describeConditions lists the conditions of u, one per line: "Type=Status Reason: message".
func describeConditions(u *unstructured.Unstructured) string {
	if u == nil {
		return "(not found)"
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if len(conds) == 0 {
		return fmt.Sprintf("%s %s has no conditions yet", u.GetKind(), u.GetName())
	}
	var lines []string
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			lines = append(lines, fmt.Sprintf("%v=%v %v: %v", m["type"], m["status"], m["reason"], m["message"]))
		}
	}
	return strings.Join(lines, "\n")
}
