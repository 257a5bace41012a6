package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestOutputFlag(t *testing.T) {
	if _, _, err := run(t, "catalog", "validate", ".", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "use table, yaml or json") {
		t.Fatalf("err = %v", err)
	}
}

func TestTables(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cond := func(typ, status, reason, msg string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	var buf bytes.Buffer
	last := metav1.NewTime(now.Add(-90 * time.Second))
	cat := catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 2}, Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{Image: &rukpakv1alpha1.ImageSource{Ref: "127.0.0.1:5000/c:1"}}}}
	cat.Status = catalogdv1alpha1.CatalogStatus{ShortHash: "abc123", LastUnpacked: &last, Counts: &catalogdv1alpha1.CatalogCounts{Packages: 1, Bundles: 2},
		Conditions: []metav1.Condition{cond("Unpacked", "False", "UnpackFailed", "image not found", 2), cond("Serving", "True", "ServingPreviousContent", "", 2)}}
	if err := catalogTable([]catalogdv1alpha1.Catalog{cat}, now).Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME", "SERVING", "HASH", "demo", "127.0.0.1:5000/c:1", "True", "abc123", "90s", "UnpackFailed: image not found"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("catalog table lacks %q:\n%s", want, buf.String())
		}
	}

	buf.Reset()
	op := operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 3}, Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg"}}
	op.Status.InstalledBundle = &operatorsv1alpha1.BundleMetadata{Name: "pkg.v0.1.0", Version: "0.1.0"}
	op.Status.InstallNamespace = "pkg-system"
	op.Status.Conditions = []metav1.Condition{
		cond("Resolved", "True", "ResolutionSucceeded", "", 3), cond("Installed", "True", "InstallationSucceeded", "", 3), cond("Healthy", "False", "Unhealthy", "deployment pkg: 0/1 available", 3),
		cond("UpgradeAvailable", "True", "AwaitingApproval", `version 0.2.0 (bundle pkg.v0.2.0 from catalog "demo") is available; approve it with: kubectl patch operator op --type=merge -p '{"spec":{"approvedVersion":"0.2.0"}}'`, 3),
	}
	if err := operatorTable([]operatorsv1alpha1.Operator{op}).Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"op", "pkg", "0.1.0", "0.2.0 (AwaitingApproval)", "pkg-system", "Healthy=False reason Unhealthy: deployment pkg: 0/1 available"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("operator table lacks %q:\n%s", want, buf.String())
		}
	}
}
