package cli

import (
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// TestStatusClusterVersion: `status --cluster-version X` says, per installed Operator, whether its
// bundle allows Kubernetes X (the composite bundles' CSVs need 1.28.0) and exits non-zero when one
// does not; a bundle no catalog serves any more is checked with the properties its status records
// (olm.maxOpenShiftVersion against --openshift-version).
func TestStatusClusterVersion(t *testing.T) {
	hub := installedOperator("hub", "hub-operator", "1.0.0", nil)
	alpha := installedOperator("alpha-operator", "alpha-operator", "1.0.0", nil)
	gone := installedOperator("gone", "gone-operator", "2.0.0", nil)
	gone.Status.InstalledBundle.Properties = []operatorsv1alpha1.BundleProperty{{Type: olm.PropertyMaxOpenShiftVersion, Value: `"4.16"`}}
	notInstalled := installedOperator("pending", "hub-operator", "1.0.0", nil)
	notInstalled.Status.InstalledBundle = nil
	pc := newPreviewCluster(t, hub, alpha, gone, notInstalled)

	out, errOut, err := pc.run(t, "status", "--cluster-version", "1.27.3")
	t.Logf("status --cluster-version 1.27.3\n%s%s", out, errOut)
	if err == nil || !IsSilent(err) {
		t.Fatalf("status --cluster-version 1.27.3: %v, want a silent failure (exit 1)", err)
	}
	for _, want := range []string{
		"NAME             PACKAGE          INSTALLED                   KUBERNETES 1.27.3   MESSAGE",
		"hub              hub-operator     hub-operator.v1.0.0 1.0.0   Blocks              needs Kubernetes >= 1.28.0 (minKubeVersion), the cluster runs 1.27.3",
		"alpha-operator   alpha-operator   alpha-operator.v1.0.0 1.0.0 Blocks",
		"gone             gone-operator    gone-operator.v2.0.0 2.0.0  Unknown             no serving catalog has the bundle",
	} {
		if !containsText(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pending") {
		t.Errorf("an Operator with nothing installed is listed:\n%s", out)
	}
	if !strings.Contains(errOut, "2 installed Operators cannot run on Kubernetes 1.27.3: alpha-operator, hub") {
		t.Errorf("stderr %q", errOut)
	}

	// A version every bundle allows; one Operator by name.
	out, errOut, err = pc.run(t, "status", "hub", "--cluster-version", "v1.31.0")
	if err != nil || !strings.Contains(out, "hub-operator.v1.0.0 1.0.0   Allows") || strings.Contains(out, "alpha-operator") ||
		!strings.Contains(errOut, "every installed Operator's bundle allows Kubernetes v1.31.0") {
		t.Errorf("status hub --cluster-version v1.31.0: %v\n%s%s", err, out, errOut)
	}

	// OpenShift: the recorded olm.maxOpenShiftVersion of the bundle the catalogs no longer serve.
	out, errOut, err = pc.run(t, "status", "--openshift-version", "4.17", "-o", "json")
	if err == nil || !strings.Contains(out, `"result": "Blocks"`) || !strings.Contains(out, "4.16 (olm.maxOpenShiftVersion), the cluster runs 4.17") ||
		!strings.Contains(errOut, "1 installed Operator cannot run on OpenShift 4.17: gone") {
		t.Errorf("status --openshift-version 4.17: %v\n%s%s", err, out, errOut)
	}

	if _, _, err := pc.run(t, "status", "--cluster-version", "latest"); err == nil || !strings.Contains(err.Error(), `"latest" is not a version`) {
		t.Errorf("status --cluster-version latest: %v", err)
	}
	if w := pc.realWrites(); len(w) > 0 {
		t.Errorf("status wrote %q", w)
	}
}
