package preview

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RBACGrant is one role of a bundle and who is bound to it: what the operator would be granted.
type RBACGrant struct {
	Operator string `json:"operator"`
	// Role is "ClusterRole <name>" or "Role <namespace>/<name>".
	Role string `json:"role"`
	// Binding is "ClusterRoleBinding <name>" or "RoleBinding <namespace>/<name>"; "" when nothing in
	// the bundle binds the role.
	Binding string `json:"binding,omitempty"`
	// Scope is "cluster-wide", "namespace <name>", or "not bound".
	Scope    string   `json:"scope"`
	Subjects []string `json:"subjects,omitempty"`
	// Rules are the role's rules, one line each: verbs, then resources (resource.group).
	Rules []string `json:"rules"`
	// Change compares the role with the live one: new, unchanged, or changed (+added -removed rules);
	// "existing" for a role the bundle binds but does not define.
	Change   string   `json:"change"`
	Warnings []string `json:"warnings,omitempty"`
}

type roleDef struct {
	key, kind, ns, name string
	rules               []rbacv1.PolicyRule
	bound               bool
}

// rbacGrants summarises the Roles, ClusterRoles and bindings among r's objects. A binding to a role
// the bundle does not define (e.g. the cluster's "view") is described from the live role.
func rbacGrants(ctx context.Context, c client.Reader, r *rendered) ([]RBACGrant, error) {
	rb, err := collectRBAC(r.objects)
	if err != nil {
		return nil, err
	}
	var out []RBACGrant
	for _, b := range rb.crbs {
		g, err := rb.grant(ctx, c, r.op.Name, b.RoleRef, "", "ClusterRoleBinding "+b.Name, "cluster-wide", b.Subjects)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	for _, b := range rb.rbs {
		refNS := b.Namespace
		if b.RoleRef.Kind == "ClusterRole" {
			refNS = ""
		}
		g, err := rb.grant(ctx, c, r.op.Name, b.RoleRef, refNS, "RoleBinding "+b.Namespace+"/"+b.Name, "namespace "+b.Namespace, b.Subjects)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	for _, key := range rb.order {
		d := rb.roles[key]
		if d.bound {
			continue
		}
		change, err := roleChange(ctx, c, d)
		if err != nil {
			return nil, err
		}
		out = append(out, RBACGrant{Operator: r.op.Name, Role: roleLabel(d.kind, d.ns, d.name), Scope: "not bound", Rules: ruleLines(d.rules), Change: change})
	}
	return out, nil
}

// bundleRBAC is the RBAC among a bundle's objects.
type bundleRBAC struct {
	// roles are the Roles and ClusterRoles by roleKey; order is their keys in the bundle's order.
	roles map[string]*roleDef
	order []string
	rbs   []rbacv1.RoleBinding
	crbs  []rbacv1.ClusterRoleBinding
}

// collectRBAC picks the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings out of objects.
func collectRBAC(objects []*unstructured.Unstructured) (*bundleRBAC, error) {
	rb := &bundleRBAC{roles: map[string]*roleDef{}}
	for _, u := range objects {
		if u.GroupVersionKind().Group != rbacv1.GroupName {
			continue
		}
		switch u.GetKind() {
		case "Role", "ClusterRole":
			role := &rbacv1.ClusterRole{} // Role has the same rules; its namespace is in the metadata
			if err := fromUnstructured(u, role); err != nil {
				return nil, err
			}
			d := &roleDef{key: roleKey(u.GetKind(), u.GetNamespace(), u.GetName()), kind: u.GetKind(), ns: u.GetNamespace(), name: u.GetName(), rules: role.Rules}
			rb.roles[d.key] = d
			rb.order = append(rb.order, d.key)
		case "RoleBinding":
			b := rbacv1.RoleBinding{}
			if err := fromUnstructured(u, &b); err != nil {
				return nil, err
			}
			rb.rbs = append(rb.rbs, b)
		case "ClusterRoleBinding":
			b := rbacv1.ClusterRoleBinding{}
			if err := fromUnstructured(u, &b); err != nil {
				return nil, err
			}
			rb.crbs = append(rb.crbs, b)
		}
	}
	return rb, nil
}

// grant describes what binding (of scope) grants subjects of Operator op: the rules of role ref
// (in namespace refNS), from the bundle's role, which it marks bound, else from the live one.
func (rb *bundleRBAC) grant(ctx context.Context, c client.Reader, op string, ref rbacv1.RoleRef, refNS, binding, scope string, subjects []rbacv1.Subject) (RBACGrant, error) {
	g := RBACGrant{Operator: op, Role: roleLabel(ref.Kind, refNS, ref.Name), Binding: binding, Scope: scope, Subjects: subjectNames(subjects)}
	if d := rb.roles[roleKey(ref.Kind, refNS, ref.Name)]; d != nil {
		d.bound = true
		g.Rules = ruleLines(d.rules)
		change, err := roleChange(ctx, c, d)
		if err != nil {
			return RBACGrant{}, err
		}
		g.Change = change
		g.Warnings = ruleWarnings(d.rules, scope == "cluster-wide")
		return g, nil
	}
	rules, err := liveRules(ctx, c, ref.Kind, refNS, ref.Name)
	if err != nil {
		return RBACGrant{}, err
	}
	g.Change, g.Rules = "existing", ruleLines(rules)
	if rules == nil {
		g.Rules = []string{"(the role does not exist in the cluster)"}
	}
	g.Warnings = ruleWarnings(rules, scope == "cluster-wide")
	return g, nil
}

func roleKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func roleLabel(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// liveRules reads the rules of a role in the cluster (nil when it does not exist).
func liveRules(ctx context.Context, c client.Reader, kind, ns, name string) ([]rbacv1.PolicyRule, error) {
	var obj client.Object = &rbacv1.ClusterRole{}
	if kind == "Role" {
		obj = &rbacv1.Role{}
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	if r, ok := obj.(*rbacv1.Role); ok {
		return r.Rules, nil
	}
	return obj.(*rbacv1.ClusterRole).Rules, nil
}

// roleChange compares a role of the bundle with the live one.
func roleChange(ctx context.Context, c client.Reader, d *roleDef) (string, error) {
	var obj client.Object = &rbacv1.ClusterRole{}
	if d.kind == "Role" {
		obj = &rbacv1.Role{}
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: d.name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return "new", nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", roleLabel(d.kind, d.ns, d.name), err)
	}
	var live []rbacv1.PolicyRule
	if r, ok := obj.(*rbacv1.Role); ok {
		live = r.Rules
	} else {
		live = obj.(*rbacv1.ClusterRole).Rules
	}
	before, after := ruleLines(live), ruleLines(d.rules)
	added, removed := 0, 0
	for _, l := range after {
		if !slices.Contains(before, l) {
			added++
		}
	}
	for _, l := range before {
		if !slices.Contains(after, l) {
			removed++
		}
	}
	if added == 0 && removed == 0 {
		return "unchanged", nil
	}
	return fmt.Sprintf("changed (+%d -%d rules)", added, removed), nil
}

// ruleLines renders rules one per line: "get,list,watch deployments.apps, pods".
func ruleLines(rules []rbacv1.PolicyRule) []string {
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		verbs := strings.Join(r.Verbs, ",")
		if len(r.NonResourceURLs) > 0 {
			out = append(out, verbs+" "+strings.Join(r.NonResourceURLs, ", "))
			continue
		}
		var res []string
		groups := r.APIGroups
		if len(groups) == 0 {
			groups = []string{""}
		}
		for _, g := range groups {
			for _, rs := range r.Resources {
				if g != "" {
					rs += "." + g
				}
				res = append(res, rs)
			}
		}
		line := verbs + " " + strings.Join(res, ", ")
		if len(r.ResourceNames) > 0 {
			line += " (named " + strings.Join(r.ResourceNames, ", ") + ")"
		}
		out = append(out, line)
	}
	return out
}

// ruleWarnings points out what deserves a second look before granting it.
func ruleWarnings(rules []rbacv1.PolicyRule, clusterWide bool) []string {
	var out []string
	add := func(w string) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	for _, r := range rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			add("wildcard rule (* in verbs, resources or API groups)")
		}
		for _, v := range []string{"escalate", "bind", "impersonate"} {
			if slices.Contains(r.Verbs, v) {
				add("may grant itself more (" + v + ")")
			}
		}
		if clusterWide && slices.Contains(r.Resources, "secrets") && len(r.ResourceNames) == 0 &&
			(slices.Contains(r.Verbs, "get") || slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "watch")) {
			add("reads Secrets in every namespace")
		}
	}
	sort.Strings(out)
	return out
}

func subjectNames(subjects []rbacv1.Subject) []string {
	out := make([]string, 0, len(subjects))
	for _, s := range subjects {
		name := s.Name
		if s.Namespace != "" {
			name = s.Namespace + "/" + s.Name
		}
		out = append(out, s.Kind+" "+name)
	}
	return out
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("reading %s %s of the bundle: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}
