package bundlegen

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// testInstallNamespace is where the tests render bundles.
const testInstallNamespace = "olmv1-generate-test"

// renderBundle renders a bundle directory with rukpak's registry+v1 renderer, as `bundle render`
// does, with the given watched namespaces.
func renderBundle(dir string, watch []string) ([]*unstructured.Unstructured, error) {
	res, err := bundlerender.Render(context.Background(), dir, bundlerender.Options{
		Name: "bundle", InstallNamespace: testInstallNamespace,
		Provisioner: rukpakv1alpha1.ProvisionerRegistry,
		Config:      &rukpakv1alpha1.BundleConfig{WatchNamespaces: watch},
	})
	if err != nil {
		return nil, err
	}
	return res.Objects, nil
}

// rendered is a render sorted into what the equivalence is about.
type rendered struct {
	deployments map[string]string          // name → JSON (CSV annotations removed from pods)
	grants      map[string]map[string]bool // subject @ scope → rules (JSON) or role references
	accounts    map[string]string          // ServiceAccount name → JSON
	unbound     map[string]string          // roles no binding refers to, by kind/name → rules JSON
	others      map[string]string          // kind/namespace/name → JSON
}

// summarize sorts objs; csvAnnotations are the CSV's annotations, which the renderer copies onto
// every pod template and which are not the input's business.
func summarize(t *testing.T, objs []*unstructured.Unstructured, csv *csvInfo) *rendered {
	t.Helper()
	r := &rendered{deployments: map[string]string{}, grants: map[string]map[string]bool{}, accounts: map[string]string{}, unbound: map[string]string{}, others: map[string]string{}}
	roles := map[string][]rbacv1.PolicyRule{}
	referenced := map[string]bool{}
	var bindings []*unstructured.Unstructured
	for _, u := range objs {
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		switch u.GetKind() {
		case "Deployment":
			d := u.DeepCopy()
			ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
			for k := range csv.annotations {
				if _, own := csv.podAnnotations[u.GetName()][k]; !own && k != "olm.targetNamespaces" && k != "olm.operatorNamespace" {
					delete(ann, k)
				}
			}
			_ = unstructured.SetNestedStringMap(d.Object, ann, "spec", "template", "metadata", "annotations")
			r.deployments[u.GetName()] = mustJSON(t, d.Object)
		case "ServiceAccount":
			r.accounts[u.GetName()] = mustJSON(t, u.Object)
		case "Role", "ClusterRole":
			var role rbacv1.ClusterRole
			fromMap(t, u.Object, &role)
			roles[key] = role.Rules
			if _, agg, _ := unstructured.NestedMap(u.Object, "aggregationRule"); agg {
				r.others[key] = mustJSON(t, u.Object)
				referenced[key] = true
			}
		case "RoleBinding", "ClusterRoleBinding":
			bindings = append(bindings, u)
		default:
			r.others[key] = mustJSON(t, u.Object)
		}
	}
	for _, b := range bindings {
		var rb rbacv1.RoleBinding
		fromMap(t, b.Object, &rb)
		scope := "cluster"
		roleKey := "ClusterRole//" + rb.RoleRef.Name
		if b.GetKind() == "RoleBinding" {
			scope = "namespace " + b.GetNamespace()
			if rb.RoleRef.Kind == "Role" {
				roleKey = "Role/" + b.GetNamespace() + "/" + rb.RoleRef.Name
			}
		}
		referenced[roleKey] = true
		rules, found := roles[roleKey]
		for _, s := range rb.Subjects {
			who := fmt.Sprintf("%s %s/%s @ %s", s.Kind, s.Namespace, s.Name, scope)
			if r.grants[who] == nil {
				r.grants[who] = map[string]bool{}
			}
			if !found {
				r.grants[who]["role "+roleKey] = true
			}
			for _, rule := range rules {
				r.grants[who][mustJSON(t, rule)] = true
			}
		}
	}
	for k, rules := range roles {
		if !referenced[k] {
			r.unbound[k] = mustJSON(t, rules)
		}
	}
	return r
}

// differences lists how b differs from a, one line each, at most a few per part.
func (a *rendered) differences(b *rendered) []string {
	var out []string
	for _, part := range []struct {
		name string
		a, b any
	}{
		{"deployments", a.deployments, b.deployments}, {"RBAC grants", a.grants, b.grants},
		{"service accounts", a.accounts, b.accounts}, {"unbound roles", a.unbound, b.unbound}, {"other objects", a.others, b.others},
	} {
		if reflect.DeepEqual(part.a, part.b) {
			continue
		}
		out = append(out, part.name+": "+mapDiff(part.a, part.b))
	}
	return out
}

// mapDiff names the keys whose values differ between two maps of the same type.
func mapDiff(a, b any) string {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	keys := map[string]bool{}
	for _, k := range av.MapKeys() {
		keys[k.String()] = true
	}
	for _, k := range bv.MapKeys() {
		keys[k.String()] = true
	}
	var diffs []string
	for _, k := range sortedKeys(keys) {
		x, y := av.MapIndex(reflect.ValueOf(k)), bv.MapIndex(reflect.ValueOf(k))
		switch {
		case !x.IsValid():
			diffs = append(diffs, "+"+k)
		case !y.IsValid():
			diffs = append(diffs, "-"+k)
		case !reflect.DeepEqual(x.Interface(), y.Interface()):
			diffs = append(diffs, "~"+k+describeChange(x.Interface(), y.Interface()))
		}
	}
	if len(diffs) > 4 {
		diffs = append(diffs[:4], fmt.Sprintf("(%d more)", len(diffs)-4))
	}
	return strings.Join(diffs, ", ")
}

func describeChange(x, y any) string {
	xs, ok1 := x.(map[string]bool)
	ys, ok2 := y.(map[string]bool)
	if !ok1 || !ok2 {
		xj, yj := fmt.Sprint(x), fmt.Sprint(y)
		for i := 0; i < len(xj) && i < len(yj); i++ {
			if xj[i] != yj[i] {
				lo := max(0, i-60)
				return fmt.Sprintf(" (at %q vs %q)", xj[lo:min(len(xj), i+60)], yj[lo:min(len(yj), i+60)])
			}
		}
		return ""
	}
	var only []string
	for k := range xs {
		if !ys[k] {
			only = append(only, "-"+k)
		}
	}
	for k := range ys {
		if !xs[k] {
			only = append(only, "+"+k)
		}
	}
	sort.Strings(only)
	if len(only) > 2 {
		only = append(only[:2], "...")
	}
	return " (" + strings.Join(only, " ") + ")"
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func fromMap(t *testing.T, m map[string]any, into any) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

// csvInfo is what a CSV adds to the pod templates it renders: its annotations, except where the
// pod template sets them itself.
type csvInfo struct {
	annotations    map[string]string
	podAnnotations map[string]map[string]string // deployment → its template's own annotations
}

// csvInfoOf reads the CSV of a bundle directory.
func csvInfoOf(t *testing.T, dir string) *csvInfo {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if yaml.Unmarshal(data, &u.Object) != nil || u.GetKind() != "ClusterServiceVersion" {
			continue
		}
		info := &csvInfo{annotations: u.GetAnnotations(), podAnnotations: map[string]map[string]string{}}
		deps, _, _ := unstructured.NestedSlice(u.Object, "spec", "install", "spec", "deployments")
		for _, d := range deps {
			m, _ := d.(map[string]any)
			name, _ := m["name"].(string)
			ann, _, _ := unstructured.NestedStringMap(m, "spec", "template", "metadata", "annotations")
			info.podAnnotations[name] = ann
		}
		return info
	}
	t.Fatalf("%s has no CSV", dir)
	return nil
}
