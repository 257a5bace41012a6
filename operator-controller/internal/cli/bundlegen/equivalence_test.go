package bundlegen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestGeneratedBundleRendersInputObjects: the bundle generated from each fixture, rendered by
// rukpak's registry+v1 renderer (as `bundle render` renders it) in AllNamespaces and OwnNamespace
// mode, has the input's Deployments (name, labels, spec; rukpak's own additions aside) and grants
// the input's RBAC: OwnNamespace exactly as the input's bindings do in the install namespace;
// AllNamespaces the same, except that the Deployment account's namespaced rules hold in every
// namespace (with read access to namespaces), which is what AllNamespaces means in OLM.
func TestGeneratedBundleRendersInputObjects(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			res, err := Generate(f.input, fixtureOptions(t, f.version))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := res.Write(dir); err != nil {
				t.Fatal(err)
			}
			input, err := Load(f.input)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []struct {
				name  string
				watch []string
			}{{"AllNamespaces", nil}, {"OwnNamespace", []string{testInstallNamespace}}} {
				objs, err := renderBundle(dir, mode.watch)
				if err != nil {
					t.Fatal(err)
				}
				got := summarize(t, objs, csvInfoOf(t, dir))
				want := expectedGrants(t, input, mode.name == "AllNamespaces")
				if !reflect.DeepEqual(got.grants, want) {
					t.Errorf("%s: RBAC differs from the input's: %s", mode.name, mapDiff(want, got.grants))
				}
				compareDeployments(t, mode.name, input, objs, csvInfoOf(t, dir))
			}
		})
	}
}

// expectedGrants are the grants of the input's bindings once installed into testInstallNamespace.
func expectedGrants(t *testing.T, input []Object, allNamespaces bool) map[string]map[string]bool {
	t.Helper()
	var objs []*unstructured.Unstructured
	deploymentAccounts := map[string]bool{}
	for _, o := range input {
		u := o.Obj.DeepCopy()
		switch o.gk() {
		case deploymentKind:
			var d appsv1.Deployment
			fromMap(t, u.Object, &d)
			deploymentAccounts[serviceAccountOf(&d)] = true
		case roleKind, roleBindingKind:
			u.SetNamespace(testInstallNamespace)
		}
		if k := o.gk(); k == roleBindingKind || k == clusterRoleBindingKind {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				if m := s.(map[string]any); m["kind"] == "ServiceAccount" {
					m["namespace"] = testInstallNamespace
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
		}
		objs = append(objs, u)
	}
	grants := summarize(t, objs, &csvInfo{}).grants
	if !allNamespaces {
		return grants
	}
	ns, _ := json.Marshal(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}})
	for who, rules := range grants {
		sa := strings.TrimPrefix(strings.Split(who, " @ ")[0], "ServiceAccount "+testInstallNamespace+"/")
		if !deploymentAccounts[sa] || !strings.HasSuffix(who, " @ namespace "+testInstallNamespace) {
			continue
		}
		delete(grants, who)
		cluster := "ServiceAccount " + testInstallNamespace + "/" + sa + " @ cluster"
		if grants[cluster] == nil {
			grants[cluster] = map[string]bool{}
		}
		for r := range rules {
			grants[cluster][r] = true
		}
		grants[cluster][string(ns)] = true
	}
	return grants
}

// compareDeployments compares each input Deployment with the rendered one, without what rukpak
// adds (owner labels, olm.* annotations, revisionHistoryLimit, the webhook certificate volumes) and
// the CSV's annotations, which rukpak (as OLM) copies onto every pod.
func compareDeployments(t *testing.T, mode string, input []Object, rendered []*unstructured.Unstructured, csv *csvInfo) {
	t.Helper()
	byName := map[string]*unstructured.Unstructured{}
	for _, u := range rendered {
		if u.GetKind() == "Deployment" {
			byName[u.GetName()] = u
		}
	}
	for _, o := range input {
		if o.gk() != deploymentKind {
			continue
		}
		u, ok := byName[o.Obj.GetName()]
		if !ok {
			t.Errorf("%s: Deployment %s is not rendered", mode, o.Obj.GetName())
			continue
		}
		var want, got appsv1.Deployment
		fromMap(t, o.Obj.Object, &want)
		fromMap(t, u.Object, &got)
		for k := range got.Labels {
			if strings.HasPrefix(k, "core.rukpak.io/") {
				delete(got.Labels, k)
			}
		}
		for k := range got.Spec.Template.Annotations {
			if _, fromCSV := csv.annotations[k]; strings.HasPrefix(k, "olm.") || (fromCSV && want.Spec.Template.Annotations[k] == "") {
				delete(got.Spec.Template.Annotations, k)
			}
		}
		if len(got.Spec.Template.Annotations) == 0 {
			got.Spec.Template.Annotations = nil
		}
		got.Spec.RevisionHistoryLimit = nil
		pod := &got.Spec.Template.Spec
		var volumes = pod.Volumes[:0]
		for _, v := range pod.Volumes {
			if !strings.HasPrefix(v.Name, "rukpak-") {
				volumes = append(volumes, v)
			}
		}
		pod.Volumes = volumes
		if len(pod.Volumes) == 0 {
			pod.Volumes = nil
		}
		for i := range pod.Containers {
			c := &pod.Containers[i]
			mounts := c.VolumeMounts[:0]
			for _, m := range c.VolumeMounts {
				if !strings.HasPrefix(m.Name, "rukpak-") {
					mounts = append(mounts, m)
				}
			}
			c.VolumeMounts = mounts
			if len(c.VolumeMounts) == 0 {
				c.VolumeMounts = nil
			}
		}
		if !reflect.DeepEqual(want.Labels, got.Labels) || !reflect.DeepEqual(want.Spec, got.Spec) {
			t.Errorf("%s: Deployment %s renders differently from the input:\n got %s\nwant %s", mode, o.Obj.GetName(), mustJSON(t, got.Spec), mustJSON(t, want.Spec))
		}
	}
}
