package bundlegen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// permissions are the CSV's spec.install.spec.permissions and clusterPermissions.
type permissions struct {
	namespaced, cluster []operatorsv1alpha1.StrategyDeploymentPermissions
}

// grants collects rules per service account, in order, without exact duplicates.
type grants struct {
	rules map[string][]rbacv1.PolicyRule
	seen  map[string]bool
}

func (g *grants) add(sa string, rules []rbacv1.PolicyRule) {
	if g.rules[sa] == nil {
		g.rules[sa] = []rbacv1.PolicyRule{} // an account granted an empty role still gets its binding
	}
	for _, r := range rules {
		k, _ := json.Marshal(r)
		if key := sa + "\x00" + string(k); !g.seen[key] {
			g.seen[key] = true
			g.rules[sa] = append(g.rules[sa], r)
		}
	}
}

func (g *grants) list() []operatorsv1alpha1.StrategyDeploymentPermissions {
	var out []operatorsv1alpha1.StrategyDeploymentPermissions
	for _, sa := range sortedKeys(g.rules) {
		out = append(out, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: g.rules[sa]})
	}
	return out
}

// absorbRBAC turns the roles that bindings grant to the input's service accounts into CSV
// permissions, and puts into in.other the RBAC objects and ServiceAccounts the CSV cannot express.
func absorbRBAC(in *inputs, w *warnings) (*permissions, error) {
	accounts := map[string]map[string]bool{} // name → namespaces it lives in
	addAccount := func(name, ns string) {
		if accounts[name] == nil {
			accounts[name] = map[string]bool{}
		}
		accounts[name][ns] = true
	}
	for _, d := range in.deployments {
		var dep appsv1.Deployment
		if err := toTyped(d, &dep); err != nil {
			return nil, err
		}
		addAccount(serviceAccountOf(&dep), d.Obj.GetNamespace())
	}
	ours := func(s rbacv1.Subject) bool {
		nss, ok := accounts[s.Name]
		return s.Kind == rbacv1.ServiceAccountKind && ok && (s.Namespace == "" || nss[s.Namespace] || nss[""])
	}

	roles := map[string]*Object{} // Kind/namespace/name
	for _, list := range [][]Object{in.roles, in.clusterRoles} {
		for i := range list {
			roles[roleKey(list[i].Obj.GetKind(), list[i].Obj.GetNamespace(), list[i].Obj.GetName())] = &list[i]
		}
	}
	absorbedRole, keptRole := map[*Object]bool{}, map[*Object]bool{}
	ns, cluster := &grants{rules: map[string][]rbacv1.PolicyRule{}, seen: map[string]bool{}}, &grants{rules: map[string][]rbacv1.PolicyRule{}, seen: map[string]bool{}}
	var kept []Object

	for _, b := range append(append([]Object(nil), in.roleBindings...), in.clusterRoleBindings...) {
		var rb rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
		if err := toTyped(b, &rb); err != nil {
			return nil, err
		}
		roleNS := ""
		if rb.RoleRef.Kind == "Role" {
			roleNS = b.Obj.GetNamespace()
		}
		role := roles[roleKey(rb.RoleRef.Kind, roleNS, rb.RoleRef.Name)]
		var mine, others []rbacv1.Subject
		for _, s := range rb.Subjects {
			if ours(s) {
				mine = append(mine, s)
			} else {
				others = append(others, s)
			}
		}
		switch {
		case len(mine) == 0:
			w.add("%s binds %s, none of them the ServiceAccount of a Deployment; kept as it is", b.describe(), subjectNames(rb.Subjects))
			kept = append(kept, b)
			if role != nil {
				keptRole[role] = true
			}
			continue
		case role == nil:
			w.add("%s refers to %s %q, which is not in the manifests (a role of the cluster?); kept as it is", b.describe(), rb.RoleRef.Kind, rb.RoleRef.Name)
			kept = append(kept, b)
			continue
		}
		if _, agg, _ := unstructured.NestedMap(role.Obj.Object, "aggregationRule"); agg {
			w.add("%s grants the aggregated %s; aggregated rules cannot go into the CSV, so both are kept as they are", b.describe(), role.describe())
			kept = append(kept, b)
			keptRole[role] = true
			continue
		}
		var r rbacv1.ClusterRole
		if err := toTyped(*role, &r); err != nil {
			return nil, err
		}
		into := ns
		if b.gk() == clusterRoleBindingKind {
			into = cluster
		} else if bns := b.Obj.GetNamespace(); bns != "" {
			for _, s := range mine {
				if s.Namespace != "" && s.Namespace != bns {
					w.add("%s grants %s in namespace %s; in the bundle it becomes permissions of %s, granted in the namespaces the operator watches", b.describe(), role.describe(), bns, s.Name)
				}
			}
		}
		for _, s := range mine {
			into.add(s.Name, r.Rules)
		}
		absorbedRole[role] = true
		if len(others) > 0 {
			w.add("%s also binds %s, none of them the ServiceAccount of a Deployment; the binding is kept for them", b.describe(), subjectNames(others))
			c := Object{Source: b.Source, Obj: b.Obj.DeepCopy()}
			subjects, _ := toUnstructuredSlice(others)
			_ = unstructured.SetNestedSlice(c.Obj.Object, subjects, "subjects")
			kept = append(kept, c)
			keptRole[role] = true
		}
	}
	for _, list := range [][]Object{in.roles, in.clusterRoles} {
		for i := range list {
			if keptRole[&list[i]] || !absorbedRole[&list[i]] {
				kept = append(kept, list[i])
			}
		}
	}
	for _, sa := range in.serviceAccounts {
		if _, used := accounts[sa.Obj.GetName()]; !used || hasContent(sa.Obj) {
			kept = append(kept, sa)
		}
	}
	in.other = append(in.other, kept...)
	return &permissions{namespaced: ns.list(), cluster: cluster.list()}, nil
}

func roleKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func serviceAccountOf(d *appsv1.Deployment) string {
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	if sa := d.Spec.Template.Spec.DeprecatedServiceAccount; sa != "" {
		return sa
	}
	return "default"
}

func subjectNames(subjects []rbacv1.Subject) string {
	var out []string
	for _, s := range subjects {
		n := s.Kind + " " + s.Name
		if s.Namespace != "" {
			n = s.Kind + " " + s.Namespace + "/" + s.Name
		}
		out = append(out, n)
	}
	return strings.Join(out, ", ")
}

// hasContent reports whether a ServiceAccount says more than its name, which the CSV cannot carry.
func hasContent(u *unstructured.Unstructured) bool {
	for k := range u.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return true
		}
	}
	meta, _, _ := unstructured.NestedMap(u.Object, "metadata")
	for k := range meta {
		if k != "name" && k != "namespace" && k != "creationTimestamp" {
			return true
		}
	}
	return false
}

// toTyped converts through JSON, as the API server would: unknown fields are ignored.
func toTyped(o Object, into any) error {
	data, err := json.Marshal(o.Obj.Object)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s does not match the schema of its kind: %w", o.describe(), err)
	}
	return nil
}

func toUnstructuredSlice[T any](items []T) ([]any, error) {
	data, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	var out []any
	return out, json.Unmarshal(data, &out)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
