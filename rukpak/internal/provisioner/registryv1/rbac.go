package registryv1

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// rbacObjects holds the RBAC a CSV asks for.
type rbacObjects struct {
	serviceAccounts     []*corev1.ServiceAccount
	roles               []*rbacv1.Role
	roleBindings        []*rbacv1.RoleBinding
	clusterRoles        []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

// buildRBAC renders the CSV's service accounts and permissions.
//
//   - Every service account named by spec.install.spec.permissions, clusterPermissions or a
//     Deployment's pod template becomes a ServiceAccount in installNamespace ("default" excepted: it
//     always exists).
//   - permissions become, per service account, a Role and RoleBinding in installNamespace and in each
//     watched namespace; for AllNamespaces a ClusterRole and ClusterRoleBinding instead, whose rules
//     also allow get, list and watch on namespaces (as OLM v0 grants an AllNamespaces operator).
//   - clusterPermissions become, per service account, a ClusterRole and ClusterRoleBinding.
//
// Names are <prefix>-<serviceAccount> (permissions) and <prefix>-<serviceAccount>-cluster
// (clusterPermissions); prefix is the BundleDeployment's name, so names survive upgrades.
func buildRBAC(csv *operatorsv1alpha1.ClusterServiceVersion, deployments []*appsv1.Deployment, prefix, installNamespace string, mode InstallMode) *rbacObjects {
	out := &rbacObjects{}
	strategy := csv.Spec.InstallStrategy.StrategySpec

	sas := sets.New[string]()
	for _, p := range strategy.Permissions {
		sas.Insert(p.ServiceAccountName)
	}
	for _, p := range strategy.ClusterPermissions {
		sas.Insert(p.ServiceAccountName)
	}
	for _, d := range deployments {
		sas.Insert(d.Spec.Template.Spec.ServiceAccountName)
	}
	sas.Delete("", "default")
	for _, sa := range sets.List(sas) {
		o := &corev1.ServiceAccount{}
		o.Name, o.Namespace = sa, installNamespace
		out.serviceAccounts = append(out.serviceAccounts, o)
	}

	perms := groupRules(strategy.Permissions)
	for _, sa := range sortedKeys(perms) {
		name := objectName(prefix, sa)
		subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: installNamespace}}
		if mode.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces {
			rules := append(append([]rbacv1.PolicyRule(nil), perms[sa]...), namespacesReadRule())
			out.clusterRoles = append(out.clusterRoles, clusterRole(name, rules))
			out.clusterRoleBindings = append(out.clusterRoleBindings, clusterRoleBinding(name, subject))
			continue
		}
		namespaces := sets.New(mode.Targets...).Insert(installNamespace)
		for _, ns := range sets.List(namespaces) {
			r := &rbacv1.Role{Rules: perms[sa]}
			r.Name, r.Namespace = name, ns
			rb := &rbacv1.RoleBinding{
				Subjects: subject,
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			}
			rb.Name, rb.Namespace = name, ns
			out.roles = append(out.roles, r)
			out.roleBindings = append(out.roleBindings, rb)
		}
	}

	cperms := groupRules(strategy.ClusterPermissions)
	for _, sa := range sortedKeys(cperms) {
		name := objectName(prefix, sa, "cluster")
		subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: installNamespace}}
		out.clusterRoles = append(out.clusterRoles, clusterRole(name, cperms[sa]))
		out.clusterRoleBindings = append(out.clusterRoleBindings, clusterRoleBinding(name, subject))
	}
	return out
}

// namespacesReadRule is the rule OLM v0 adds to the ClusterRole of an AllNamespaces operator's
// permissions: an operator that watches every namespace may list them.
func namespacesReadRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{corev1.GroupName}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}
}

// groupRules merges the rules of entries naming the same service account.
func groupRules(ps []operatorsv1alpha1.StrategyDeploymentPermissions) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, p := range ps {
		sa := p.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		rules := out[sa]
		if rules == nil {
			rules = []rbacv1.PolicyRule{}
		}
		out[sa] = append(rules, p.Rules...)
	}
	return out
}

func clusterRole(name string, rules []rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{Rules: rules}
	r.Name = name
	return r
}

func clusterRoleBinding(name string, subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		Subjects: subjects,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
	b.Name = name
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// maxNameLength keeps generated names valid as DNS subdomains (and as label values where they are
// used in selectors by others, which 63 would require; 253 is the object name limit).
const maxNameLength = 253

// objectName joins parts with "-"; a name longer than maxNameLength is cut and suffixed with a hash
// of the whole so that it stays unique and deterministic.
func objectName(parts ...string) string {
	name := ""
	for i, p := range parts {
		if i > 0 {
			name += "-"
		}
		name += p
	}
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])[:10]
	return name[:maxNameLength-len(h)-1] + "-" + h
}
