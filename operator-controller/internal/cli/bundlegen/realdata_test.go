package bundlegen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// TestRealBundlesRoundTrip turns every real registry+v1 bundle of the shared test data (corpus/*/*
// and bundles/*/*) back into the plain manifests its CSV describes, generates a bundle from them,
// renders the original and the generated bundle with rukpak's registry+v1 renderer and compares
// the Deployments, the RBAC they grant (per subject and scope), the ServiceAccounts and every other
// object. At least 90% must be identical; the others are logged with the reason.
func TestRealBundlesRoundTrip(t *testing.T) {
	root, ok := sharedtestdata.Root()
	if !ok {
		t.Skip("no shared test data: set OLMV1_TESTDATA to the shared testdata directory (../shared/testdata beside the repository)")
	}
	var dirs []string
	for _, pattern := range []string{"corpus/*/*", "bundles/*/*"} {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, d := range m {
			if _, err := os.Stat(filepath.Join(d, "metadata", "annotations.yaml")); err == nil {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) == 0 {
		t.Skipf("no registry+v1 bundles under %s (corpus/*/*, bundles/*/*): set OLMV1_TESTDATA to the shared testdata directory", root)
	}
	identical, exact, compared := 0, 0, 0
	for _, d := range dirs {
		name, _ := filepath.Rel(root, d)
		why, same, err := roundTrip(t, d)
		if errors.Is(err, errOriginalDoesNotRender) {
			t.Logf("SKIPPED %s: %v", name, err)
			continue
		}
		compared++
		switch {
		case err != nil:
			t.Logf("DIFFERS %s: %v", name, err)
		case len(why) > 0:
			t.Logf("DIFFERS %s:\n  %s", name, strings.Join(why, "\n  "))
		default:
			identical++
			if same {
				exact++
			}
		}
	}
	t.Logf("round trip: %d of %d real bundles render identically (%d of them object for object, the rest with the same effective RBAC); %d bundles skipped because rukpak cannot render the original",
		identical, compared, exact, len(dirs)-compared)
	fmt.Printf("bundle generate real-data round trip: %d of %d identical (%d object for object; %d originals unrenderable, skipped)\n", identical, compared, exact, len(dirs)-compared)
	if compared == 0 || identical*10 < compared*9 {
		t.Errorf("only %d of %d real bundles round-trip identically; want at least 90%%", identical, compared)
	}
}

var errOriginalDoesNotRender = errors.New("rukpak cannot render the original bundle")

// roundTrip returns how the generated bundle renders differently from the original in dir, and
// whether the rendered objects are the same object for object.
func roundTrip(t *testing.T, dir string) ([]string, bool, error) {
	plain := t.TempDir()
	opts, watch, err := csvToPlain(dir, plain)
	if err != nil {
		return nil, false, fmt.Errorf("turning the CSV into plain manifests: %w", err)
	}
	res, err := Generate(plain, opts)
	if err != nil {
		return nil, false, fmt.Errorf("generate: %w", err)
	}
	out := t.TempDir()
	if _, err := res.Write(out); err != nil {
		return nil, false, err
	}
	origObjs, err := renderBundle(dir, watch)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", errOriginalDoesNotRender, err)
	}
	genObjs, err := renderBundle(out, watch)
	if err != nil {
		return nil, false, fmt.Errorf("rendering the generated bundle: %w", err)
	}
	orig := summarize(t, origObjs, csvInfoOf(t, dir))
	gen := summarize(t, genObjs, csvInfoOf(t, out))
	return orig.differences(gen), sameObjects(t, origObjs, genObjs, dir, out), nil
}

// sameObjects compares two renders object for object (pod annotations from the CSVs aside).
func sameObjects(t *testing.T, a, b []*unstructured.Unstructured, dirA, dirB string) bool {
	norm := func(objs []*unstructured.Unstructured, ann *csvInfo) map[string]string {
		out := map[string]string{}
		s := summarize(t, objs, ann)
		for _, u := range objs {
			k := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
			out[k] = mustJSON(t, u.Object)
			if u.GetKind() == "Deployment" {
				out[k] = s.deployments[u.GetName()]
			}
		}
		return out
	}
	return reflect.DeepEqual(norm(a, csvInfoOf(t, dirA)), norm(b, csvInfoOf(t, dirB)))
}
