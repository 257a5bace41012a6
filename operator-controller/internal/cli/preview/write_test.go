package preview

import (
	"bytes"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestWritePlan(t *testing.T) {
	plan := &Plan{
		Action: "upgrade", Operator: "w", Package: "widgets", From: "1.0.0", To: "1.1.0",
		Bundles: []PlannedBundle{{Operator: "w", Package: "widgets", Bundle: "widgets.v1.1.0", Version: "1.1.0", Catalog: "main", Image: "r/w:1.1.0", Installed: "1.0.0", Change: "upgrade", Why: []string{"requirement: x", "channel: stable"}}},
		Objects: []PlannedObject{
			{Action: "update", Kind: "Deployment", Namespace: "ops", Name: "w", Operator: "w", By: byRukpak, Diff: "--- a\n+++ b\n-x\n+y\n"},
			{Action: "unchanged", Kind: "ServiceAccount", Namespace: "ops", Name: "w", Operator: "w", By: byRukpak},
			{Action: "create", Kind: "ConfigMap", Namespace: "ops", Name: "c", Operator: "w", By: byRukpak},
		},
		RBAC: []RBACGrant{{Operator: "w", Role: "ClusterRole w", Binding: "ClusterRoleBinding w", Scope: "cluster-wide", Subjects: []string{"ServiceAccount ops/w"},
			Rules:  ruleLines([]rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, {Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}),
			Change: "changed (+1 -0 rules)", Warnings: ruleWarnings([]rbacv1.PolicyRule{{Verbs: []string{"*"}}}, true)}},
	}
	plan.CRDs = append(plan.CRDs, CRDFinding{Operator: "w"})
	plan.CRDs[0].CRD, plan.CRDs[0].Installed, plan.CRDs[0].Problems = "widgets.example.com", true, []string{"CRD widgets.example.com changes scope from Namespaced to Cluster"}
	var b bytes.Buffer
	if err := Write(&b, plan); err != nil {
		t.Fatal(err)
	}
	want := `Upgrade Operator w (package widgets): 1.0.0 -> 1.1.0
(preview: nothing was changed in the cluster)

RESOLUTION
OPERATOR   BUNDLE           VERSION   CHANGE               CATALOG   OPERATOR CREATED BY
w          widgets.v1.1.0   1.1.0     upgrade from 1.0.0   main      -

WHY
widgets.v1.1.0 (Operator w, image r/w:1.1.0)
  requirement: x
  channel: stable

OBJECTS
ACTION      KIND             NAMESPACE   NAME   OPERATOR   BY       NOTE
update      Deployment       ops         w      w          rukpak   
unchanged   ServiceAccount   ops         w      w          rukpak   
create      ConfigMap        ops         c      w          rukpak   
1 to create, 1 to update, 1 unchanged

DIFF
--- a
+++ b
-x
+y

RBAC
ClusterRole w (changed (+1 -0 rules)), bound cluster-wide by ClusterRoleBinding w to ServiceAccount ops/w [Operator w]
    * deployments.apps
    get /metrics
    ! wildcard rule (* in verbs, resources or API groups)

CRD UPGRADE SAFETY
widgets.example.com: UNSAFE: rukpak would refuse the upgrade (Installed=False, reason UpgradeBlocked) and keep the installed bundle [Operator w]
    CRD widgets.example.com changes scope from Namespaced to Cluster
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
