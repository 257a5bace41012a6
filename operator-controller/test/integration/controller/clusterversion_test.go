package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// A bundle whose minKubeVersion is above the API server's version (discovery) is not a candidate:
// the Operator installs the older bundle, and Resolved names the skipped one and why.
func TestBundleAboveClusterVersionIsSkipped(t *testing.T) {
	info, err := disc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.TrimPrefix(info.GitVersion, "v")
	if i := strings.IndexAny(runs, "-+"); i >= 0 {
		runs = runs[:i]
	}
	serveCatalog(t, "kube-version", "kv1", packageFBC("kv",
		bundleFBC{version: "1.0.0"},
		bundleFBC{version: "2.0.0", replaces: "1.0.0", extra: `{"type":"olm.csv.metadata","value":{"minKubeVersion":"99.0.0"}}`},
	), nil)
	createOperator(t, "kv-op", operatorsv1alpha1.OperatorSpec{PackageName: "kv"})

	waitForBDImage(t, "kv-op", image("kv", "1.0.0"))
	waitForCondition(t, "kv-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded,
		"resolved to bundle kv.v1.0.0", "bundle kv.v2.0.0 skipped: needs Kubernetes >= 99.0.0 (minKubeVersion), the cluster runs "+runs)

	// Pinned to 2.0.0, nothing is left: Resolved says why and what to do.
	updateOperator(t, "kv-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Version = "2.0.0" })
	waitForCondition(t, "kv-op", operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed,
		`no bundle of package "kv" that Operator "kv-op" may install can run on this cluster`, "bundle kv.v2.0.0 skipped", "Upgrade the cluster")
}
