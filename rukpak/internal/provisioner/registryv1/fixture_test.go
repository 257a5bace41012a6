package registryv1

import (
	"context"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
)

const (
	fixture   = "testdata/widgets"
	fixtureNS = "widgets-system"
	csvFile   = "manifests/widgets.clusterserviceversion.yaml"
)

var selfSigned = WithCertProvider(certs.NewSelfSigned(testCA))

// fixtureFS loads testdata/widgets into memory and lets a test edit its files.
func fixtureFS(t *testing.T, edit func(files map[string]string)) fs.FS {
	t.Helper()
	return bundleFS(t, fixture, edit)
}

// bundleFS loads the bundle in dir into memory and lets a test edit its files.
func bundleFS(t *testing.T, dir string, edit func(files map[string]string)) fs.FS {
	t.Helper()
	files := map[string]string{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(dir), p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(files)
	}
	m := fstest.MapFS{}
	for p, c := range files {
		m[p] = &fstest.MapFile{Data: []byte(c)}
	}
	return m
}

func renderFS(t *testing.T, content fs.FS, cfg *rukpakv1alpha1.BundleConfig, opts ...Option) (*rendered, error) {
	t.Helper()
	objs, err := New(opts...).Render(context.Background(), provisioner.Request{Content: content, Name: "bd", InstallNamespace: fixtureNS, Config: cfg})
	if err != nil {
		return nil, err
	}
	return newRendered(t, objs), nil
}

// editCSV replaces old with new in the fixture's CSV, failing when old is absent.
func editCSV(t *testing.T, old, new string) func(map[string]string) {
	return editFile(t, csvFile, old, new)
}

// editFile replaces the first old with new in file, failing when old is absent.
func editFile(t *testing.T, file, old, new string) func(map[string]string) {
	return func(f map[string]string) {
		if !strings.Contains(f[file], old) {
			t.Fatalf("%s does not contain %q", file, old)
		}
		f[file] = strings.Replace(f[file], old, new, 1)
	}
}

func TestInstallModes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		watch       []string
		targets     string
		roleNS      []string // namespaces of Role bd-widget-operator; nil means ClusterRole
		webhookNSes []string // namespaceSelector values; nil means none (all namespaces)
	}{
		{name: "AllNamespaces (unset)", watch: nil, targets: ""},
		{name: "OwnNamespace", watch: []string{fixtureNS}, targets: fixtureNS, roleNS: []string{fixtureNS}, webhookNSes: []string{fixtureNS}},
		{name: "SingleNamespace", watch: []string{"team-a"}, targets: "team-a", roleNS: []string{"team-a", fixtureNS}, webhookNSes: []string{"team-a"}},
		{name: "MultiNamespace", watch: []string{"team-b", "team-a"}, targets: "team-a,team-b", roleNS: []string{"team-a", "team-b", fixtureNS}, webhookNSes: []string{"team-a", "team-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renderFS(t, fixtureFS(t, nil), watch(tc.watch...), selfSigned)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{"widget-operator", "widget-reporter"} {
				dep := r.get("Deployment " + fixtureNS + "/" + d)
				if got := dep.GetAnnotations()[TargetNamespacesAnnotation]; got != tc.targets {
					t.Errorf("%s: Deployment annotation %s = %q, want %q", d, TargetNamespacesAnnotation, got, tc.targets)
				}
				if got := str(dep, "spec", "template", "metadata", "annotations", TargetNamespacesAnnotation); got != tc.targets {
					t.Errorf("%s: pod template annotation %s = %q, want %q", d, TargetNamespacesAnnotation, got, tc.targets)
				}
			}
			if tc.roleNS == nil {
				cr := r.get("ClusterRole /bd-widget-operator")
				rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
				if len(rules) != 3 || !reflect.DeepEqual(rules[2], map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}, "verbs": []any{"get", "list", "watch"}}) {
					t.Errorf("ClusterRole bd-widget-operator rules %v, want the 2 of permissions and get/list/watch on namespaces", rules)
				}
				crb := r.get("ClusterRoleBinding /bd-widget-operator")
				if str(crb, "roleRef", "name") != "bd-widget-operator" {
					t.Errorf("ClusterRoleBinding roleRef = %v", crb.Object["roleRef"])
				}
				if n := r.count("Role"); n != 0 {
					t.Errorf("AllNamespaces rendered %d Roles, want 0", n)
				}
			} else {
				var want []string
				for _, ns := range tc.roleNS {
					want = append(want, ns+"/bd-widget-operator")
				}
				if got := r.names("Role"); !reflect.DeepEqual(got, want) {
					t.Errorf("Roles %v, want %v", got, want)
				}
				if got := r.names("RoleBinding"); !reflect.DeepEqual(got, want) {
					t.Errorf("RoleBindings %v, want %v", got, want)
				}
				for _, ns := range tc.roleNS {
					rb := r.get("RoleBinding " + ns + "/bd-widget-operator")
					subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
					s := subjects[0].(map[string]any)
					if s["name"] != "widget-operator" || s["namespace"] != fixtureNS {
						t.Errorf("RoleBinding %s subject %v, want widget-operator in %s", ns, s, fixtureNS)
					}
				}
				if r.has("ClusterRole /bd-widget-operator") {
					t.Errorf("permissions rendered as a ClusterRole outside AllNamespaces")
				}
			}
			// clusterPermissions are cluster-wide in every mode.
			if got, want := r.names("ClusterRole"), []string{"/bd-widget-operator-cluster", "/bd-widget-reporter-cluster", "/widget-metrics-reader"}; tc.roleNS != nil && !reflect.DeepEqual(got, want) {
				t.Errorf("ClusterRoles %v, want %v", got, want)
			}
			for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
				name := map[string]string{"ValidatingWebhookConfiguration": "vwidget.example.com", "MutatingWebhookConfiguration": "mwidget.example.com"}[kind]
				wc := r.get(kind + " /" + name)
				hooks, _, _ := unstructured.NestedSlice(wc.Object, "webhooks")
				sel, found, _ := unstructured.NestedSlice(hooks[0].(map[string]any), "namespaceSelector", "matchExpressions")
				if tc.webhookNSes == nil {
					if found {
						t.Errorf("%s has a namespaceSelector in AllNamespaces mode: %v", kind, sel)
					}
					continue
				}
				vals, _, _ := unstructured.NestedStringSlice(sel[0].(map[string]any), "values")
				if !reflect.DeepEqual(vals, tc.webhookNSes) {
					t.Errorf("%s namespaceSelector values %v, want %v", kind, vals, tc.webhookNSes)
				}
			}
		})
	}
}

func TestInstallModeNotSupported(t *testing.T) {
	onlyOwn := fixtureFS(t, func(f map[string]string) {
		for _, m := range []string{"SingleNamespace", "MultiNamespace", "AllNamespaces"} {
			editCSV(t, "- type: "+m+"\n    supported: true", "- type: "+m+"\n    supported: false")(f)
		}
	})
	_, err := renderFS(t, onlyOwn, watch(""), selfSigned)
	wantInvalid(t, err, "UnsupportedInstallMode", "install mode AllNamespaces", `"widgets.v1.0.0"`, "it supports OwnNamespace (omit watchNamespaces or set it to [widgets-system])")
	_, err = renderFS(t, onlyOwn, watch("a", "b"), selfSigned)
	wantInvalid(t, err, "UnsupportedInstallMode", "install mode MultiNamespace", `["a", "b"]`)
	onlyAll := fixtureFS(t, func(f map[string]string) {
		for _, m := range []string{"SingleNamespace", "MultiNamespace", "OwnNamespace"} {
			editCSV(t, "- type: "+m+"\n    supported: true", "- type: "+m+"\n    supported: false")(f)
		}
	})
	_, err = renderFS(t, onlyAll, watch(fixtureNS), selfSigned)
	wantInvalid(t, err, "UnsupportedInstallMode", "install mode OwnNamespace", "it supports AllNamespaces (omit watchNamespaces)")
	if _, err := renderFS(t, onlyOwn, watch(fixtureNS), selfSigned); err != nil {
		t.Fatalf("OwnNamespace is supported: %v", err)
	}
}

func TestInstallModeTypoIsAnError(t *testing.T) {
	typo := fixtureFS(t, editCSV(t, "- type: OwnNamespace\n", "- type: OwnNamespacejl\n"))
	_, err := renderFS(t, typo, watch("team-a"), selfSigned)
	wantInvalid(t, err, "InvalidBundle", `install mode "OwnNamespacejl"`, "AllNamespaces, OwnNamespace, SingleNamespace, MultiNamespace")
}

func TestWatchNamespacesMixingAll(t *testing.T) {
	_, err := renderFS(t, fixtureFS(t, nil), watch("", "a"), selfSigned)
	wantInvalid(t, err, "InvalidConfiguration", `mixes ""`)
}

func TestRBACAndServiceAccounts(t *testing.T) {
	r, err := renderFS(t, fixtureFS(t, nil), watch(fixtureNS), selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.names("ServiceAccount"), []string{fixtureNS + "/widget-operator", fixtureNS + "/widget-reporter"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ServiceAccounts %v, want %v", got, want)
	}
	role := r.get("Role " + fixtureNS + "/bd-widget-operator")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if len(rules) != 2 {
		t.Errorf("two permissions entries of one service account merge into one Role with 2 rules; got %d", len(rules))
	}
	cr := r.get("ClusterRole /bd-widget-reporter-cluster")
	rules, _, _ = unstructured.NestedSlice(cr.Object, "rules")
	if res, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "resources"); !reflect.DeepEqual(res, []string{"nodes"}) {
		t.Errorf("ClusterRole bd-widget-reporter-cluster rules %v", rules)
	}
	crb := r.get("ClusterRoleBinding /bd-widget-reporter-cluster")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if s := subjects[0].(map[string]any); s["name"] != "widget-reporter" || s["namespace"] != fixtureNS || s["kind"] != "ServiceAccount" {
		t.Errorf("ClusterRoleBinding subject %v", s)
	}
	// The bundle's own ClusterRoleBinding names a ServiceAccount the bundle creates: its subject is
	// moved to the install namespace.
	own := r.get("ClusterRoleBinding /widget-metrics-reader")
	subjects, _, _ = unstructured.NestedSlice(own.Object, "subjects")
	if s := subjects[0].(map[string]any); s["namespace"] != fixtureNS {
		t.Errorf("bundle ClusterRoleBinding subject namespace %v, want %s", s["namespace"], fixtureNS)
	}
}

func TestOtherManifestsAndCRDs(t *testing.T) {
	r, err := renderFS(t, fixtureFS(t, nil), nil, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	// A namespaced bundle object always goes to the install namespace (as OLM does).
	r.get("ConfigMap " + fixtureNS + "/widget-config")
	r.get("Service " + fixtureNS + "/widget-metrics")
	crd := r.get("CustomResourceDefinition /widgets.example.com")
	if crd.GetNamespace() != "" {
		t.Errorf("CRD has namespace %q", crd.GetNamespace())
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(crd.Object, "status"); found {
		t.Errorf("CRD keeps a status")
	}
	// CRDs come first, webhook configurations last.
	if k := r.objs[0].GetObjectKind().GroupVersionKind().Kind; k != "CustomResourceDefinition" {
		t.Errorf("first object is a %s, want the CRD", k)
	}
	if k := r.objs[len(r.objs)-1].GetObjectKind().GroupVersionKind().Kind; k != "MutatingWebhookConfiguration" {
		t.Errorf("last object is a %s, want a webhook configuration", k)
	}
}

func TestDeploymentAnnotationsFromCSV(t *testing.T) {
	r, err := renderFS(t, fixtureFS(t, nil), watch("team-a"), selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	d := r.get("Deployment " + fixtureNS + "/widget-operator")
	ann, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "annotations")
	if ann["alm-examples"] == "" {
		t.Errorf("CSV annotation alm-examples not copied to the pod template: %v", ann)
	}
	if ann["capabilities"] != "overridden-by-pod" {
		t.Errorf("the pod template's own annotation must win over the CSV's: capabilities=%q", ann["capabilities"])
	}
	if _, ok := ann["operatorframework.io/properties"]; ok {
		t.Errorf("operatorframework.io/properties must not be copied")
	}
	if d.GetLabels()["app"] != "widget-operator" {
		t.Errorf("deployment labels from the CSV's label field: %v", d.GetLabels())
	}
}
