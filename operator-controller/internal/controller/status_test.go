package controller

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestProvisionerFor(t *testing.T) {
	for mt, want := range map[string]rukpakv1alpha1.ProvisionerClassName{
		"": rukpakv1alpha1.ProvisionerRegistry, "registry+v1": rukpakv1alpha1.ProvisionerRegistry,
		"plain+v0": rukpakv1alpha1.ProvisionerPlain, "helm+v3": rukpakv1alpha1.ProvisionerHelm,
		"kustomize+v1": rukpakv1alpha1.ProvisionerKustomize,
	} {
		if got, err := provisionerFor(mt); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", mt, got, err, want)
		}
	}
	if _, err := provisionerFor("zip+v9"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unsupported media type: %v", err)
	}
}

// TestInstallNamespace: the BundleDeployment's namespace wins (an install never moves), then
// spec.installNamespace, the bundle's suggestion and the package name; status.installNamespace is
// output only, so a stale or garbage value changes nothing.
func TestInstallNamespace(t *testing.T) {
	op := func(spec, status string) *operatorsv1alpha1.Operator {
		return &operatorsv1alpha1.Operator{Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg", InstallNamespace: spec}, Status: operatorsv1alpha1.OperatorStatus{InstallNamespace: status}}
	}
	installedIn := func(ns string) *rukpakv1alpha1.BundleDeployment {
		return &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{InstallNamespace: ns}}
	}
	suggests := &operators.Bundle{SuggestedNamespace: "suggested"}
	for _, tt := range []struct {
		name string
		op   *operatorsv1alpha1.Operator
		bd   *rukpakv1alpha1.BundleDeployment
		b    *operators.Bundle
		want string
	}{
		{"package name", op("", ""), nil, &operators.Bundle{}, "pkg"},
		{"suggested", op("", ""), nil, suggests, "suggested"},
		{"spec", op("mine", ""), nil, suggests, "mine"},
		{"the BundleDeployment's", op("mine", ""), installedIn("installed"), suggests, "installed"},
		{"a BundleDeployment without namespace", op("", ""), installedIn(""), suggests, "suggested"},
		{"stale status, no BundleDeployment", op("", "chosen-before"), nil, suggests, "suggested"},
		{"garbage status, BundleDeployment", op("", "Not a Namespace!"), installedIn("installed"), suggests, "installed"},
	} {
		if got := installNamespace(tt.op, tt.bd, tt.b); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDesiredBundleDeploymentPassesConfig(t *testing.T) {
	op := &operatorsv1alpha1.Operator{
		ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid-1"},
		Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg", WatchNamespaces: []string{"a"},
			Config: &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{NodeSelector: map[string]string{"k": "v"}}}},
	}
	bd, err := desiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v1", Package: "pkg", Version: "1.0.0", Catalog: "c", Image: "r/pkg:1"}, "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	if bd.Name != "op" || bd.Spec.Source.Image.Ref != "r/pkg:1" || bd.Spec.InstallNamespace != "ns" || bd.Spec.Config.WatchNamespaces[0] != "a" ||
		bd.Spec.Config.DeploymentConfig.NodeSelector["k"] != "v" || !metav1.IsControlledBy(bd, op) || bd.Annotations[AnnotationBundleVersion] != "1.0.0" {
		t.Errorf("BundleDeployment %+v", bd)
	}
	if op.Spec.Config.WatchNamespaces != nil {
		t.Error("the Operator's spec was modified")
	}
	have := bd.DeepCopy()
	have.Labels["someone-else"] = "x"
	if mergeBundleDeployment(have, bd) {
		t.Error("merging an identical spec reported a change")
	}
	want2, _ := desiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v2", Package: "pkg", Version: "2.0.0", Image: "r/pkg:2"}, "ns", nil)
	if !mergeBundleDeployment(have, want2) || have.Spec.Source.Image.Ref != "r/pkg:2" || have.Labels["someone-else"] != "x" {
		t.Errorf("merge: %+v", have)
	}
}

func cond(op *operatorsv1alpha1.Operator, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(op.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestSetStatus(t *testing.T) {
	b1 := &operators.Bundle{Name: "p.v1", Package: "p", Version: "1.0.0", Catalog: "c", Image: "r/p:1"}
	bd := func(gen int64, installed metav1.ConditionStatus, reason string) *rukpakv1alpha1.BundleDeployment {
		d := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2, Annotations: map[string]string{
			AnnotationBundleName: "p.v1", AnnotationBundleVersion: "1.0.0", AnnotationCatalog: "c"}}}
		d.Spec.Source.Image = &rukpakv1alpha1.ImageSource{Ref: "r/p:1"}
		d.Status.Conditions = []metav1.Condition{
			{Type: rukpakv1alpha1.TypeInstalled, Status: installed, Reason: reason, ObservedGeneration: gen, Message: "m"},
			{Type: rukpakv1alpha1.TypeHealthy, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonHealthy, ObservedGeneration: gen},
		}
		return d
	}
	newOp := func(manual bool) *operatorsv1alpha1.Operator {
		op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 3}}
		if manual {
			op.Spec.UpgradePolicy = operatorsv1alpha1.UpgradePolicyManual
		}
		return op
	}

	// Installed and healthy.
	op := newOp(false)
	setStatus(op, observations{outcome: &operators.Outcome{Bundle: b1}, bd: bd(2, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded), namespace: "ns"})
	if c := cond(op, operatorsv1alpha1.TypeInstalled); c.Status != metav1.ConditionTrue || c.ObservedGeneration != 3 {
		t.Errorf("Installed %+v", c)
	}
	if op.Status.InstalledBundle == nil || op.Status.InstalledBundle.Source != "r/p:1" || op.Status.InstallNamespace != "ns" || op.Status.ObservedGeneration != 3 {
		t.Errorf("status %+v", op.Status)
	}
	if cond(op, operatorsv1alpha1.TypeHealthy).Status != metav1.ConditionTrue {
		t.Errorf("Healthy %+v", cond(op, operatorsv1alpha1.TypeHealthy))
	}

	// rukpak has not seen the new generation yet and recorded no history: installedBundle is left as
	// written above, Installed is Unknown.
	setStatus(op, observations{outcome: &operators.Outcome{Bundle: b1}, bd: bd(1, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)})
	if c := cond(op, operatorsv1alpha1.TypeInstalled); c.Status != metav1.ConditionUnknown || op.Status.InstalledBundle == nil {
		t.Errorf("stale BundleDeployment: Installed %+v, installedBundle %+v", c, op.Status.InstalledBundle)
	}
	if cond(op, operatorsv1alpha1.TypeHealthy).Status != metav1.ConditionUnknown {
		t.Errorf("stale Healthy %+v", cond(op, operatorsv1alpha1.TypeHealthy))
	}

	// Failing installation and failing resolution. Revision 1 is the digest the spec's tag resolved to
	// for this generation: the bundle the annotations name stays installed.
	failing := bd(2, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallFailed)
	failing.Status.InstalledRevision = 1
	failing.Status.History = []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ResolvedSource: resolvedImage(digestRef("r/p", '1'))}}
	failing.Status.ResolvedSource = resolvedImage(digestRef("r/p", '1'))
	failing.Status.Conditions = append(failing.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue,
		Reason: rukpakv1alpha1.ReasonUnpackSucceeded, ObservedGeneration: 2})
	setStatus(op, observations{outcome: &operators.Outcome{Message: "no bundle satisfies every constraint: x"}, bd: failing})
	if c := cond(op, operatorsv1alpha1.TypeInstalled); c.Status != metav1.ConditionFalse || c.Reason != rukpakv1alpha1.ReasonInstallFailed || c.Message != `BundleDeployment "op": m` {
		t.Errorf("Installed %+v", c)
	}
	if c := cond(op, operatorsv1alpha1.TypeResolved); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "x (bundle p.v1 stays installed, version 1.0.0); resolution is unavailable, but changes to spec.config") ||
		!strings.HasSuffix(c.Message, "(BundleDeployment op has the current ones)") {
		t.Errorf("Resolved %+v", c)
	}
	if ib := op.Status.InstalledBundle; ib == nil || ib.Name != "p.v1" || ib.Source != "r/p:1" {
		t.Errorf("installedBundle %+v", ib)
	}
	if op.Status.ResolvedBundle == nil || op.Status.ResolvedBundle.Name != "p.v1" {
		t.Errorf("resolvedBundle must keep the last successful resolution: %+v", op.Status.ResolvedBundle)
	}
	setStatus(op, observations{resolveErr: step.Failed(operatorsv1alpha1.TypeResolved, operatorsv1alpha1.ReasonResolutionFailed, errors.New("reading catalog content: boom"))})
	if c := cond(op, operatorsv1alpha1.TypeResolved); c.Reason != operatorsv1alpha1.ReasonResolutionFailed || c.Message != "reading catalog content: boom" {
		t.Errorf("Resolved %+v", c)
	}

	// Deprecation.
	op = newOp(false)
	setStatus(op, observations{outcome: &operators.Outcome{Bundle: &operators.Bundle{Name: "p.v1", Package: "p", Version: "1.0.0", PackageDeprecation: "gone", Channel: "a", ChannelDeprecation: "frozen"}}})
	if c := cond(op, operatorsv1alpha1.TypeDeprecated); c.Status != metav1.ConditionTrue || c.Reason != operatorsv1alpha1.ReasonPackageDeprecated ||
		!strings.Contains(c.Message, "gone") || !strings.Contains(c.Message, `channel "a" is deprecated: frozen`) {
		t.Errorf("Deprecated %+v", c)
	}

	// Manual upgrades.
	op = newOp(true)
	setStatus(op, observations{outcome: &operators.Outcome{Bundle: b1, UpgradeAvailable: &operators.Bundle{Name: "p.v2", Version: "2.0.0", Catalog: "c"}}})
	if c := cond(op, operatorsv1alpha1.TypeUpgradeAvailable); c.Status != metav1.ConditionTrue || c.Reason != operatorsv1alpha1.ReasonUpgradeAwaitingApproval ||
		!strings.Contains(c.Message, `kubectl patch operator op --type=merge -p '{"spec":{"approvedVersion":"2.0.0"}}'`) {
		t.Errorf("UpgradeAvailable %+v", c)
	}
	setStatus(op, observations{outcome: &operators.Outcome{Bundle: b1}})
	if c := cond(op, operatorsv1alpha1.TypeUpgradeAvailable); c.Status != metav1.ConditionFalse || c.Reason != operatorsv1alpha1.ReasonUpToDate {
		t.Errorf("UpgradeAvailable %+v", c)
	}

	// The semver guard rails: a waiting upgrade is reported with the Automatic policy too, and after
	// the one awaiting approval with Manual.
	waiting := &operators.Waiting{Name: "p.v2", Version: "2.0.0", Catalog: "c", Message: "2.0.0 is available but waits: automatic upgrades stay within major 1 (…)"}
	for _, manual := range []bool{false, true} {
		op = newOp(manual)
		setStatus(op, observations{outcome: &operators.Outcome{Bundle: b1, Waiting: waiting}})
		if c := cond(op, operatorsv1alpha1.TypeUpgradeAvailable); c.Status != metav1.ConditionTrue || c.Reason != operatorsv1alpha1.ReasonSemverGuardRail ||
			!strings.Contains(c.Message, "2.0.0 is available but waits: automatic upgrades stay within major 1") || !strings.Contains(c.Message, `bundle p.v2 from catalog "c"`) {
			t.Errorf("manual %v: UpgradeAvailable %+v", manual, c)
		}
	}
	setStatus(op, observations{outcome: &operators.Outcome{Bundle: b1, Waiting: waiting, UpgradeAvailable: &operators.Bundle{Name: "p.v1.1", Version: "1.1.0", Catalog: "c"}}})
	if c := cond(op, operatorsv1alpha1.TypeUpgradeAvailable); c.Reason != operatorsv1alpha1.ReasonUpgradeAwaitingApproval ||
		!strings.Contains(c.Message, `"approvedVersion":"1.1.0"`) || !strings.Contains(c.Message, "Also: 2.0.0 is available but waits") {
		t.Errorf("UpgradeAvailable %+v", c)
	}
}

// The Operator's Installed condition carries the BundleDeployment's own reason and message whenever
// it fails for its current generation; only waiting states are InstallationPending.
func TestSetInstalledMirrorsBundleDeployment(t *testing.T) {
	c := func(typ string, status metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	const (
		inst = rukpakv1alpha1.TypeInstalled
		unp  = rukpakv1alpha1.TypeUnpacked
		f    = metav1.ConditionFalse
		tr   = metav1.ConditionTrue
		unk  = metav1.ConditionUnknown
	)
	v0, removed := digestRef("r/p", '0'), digestRef("r/removed", '9')
	catalog := []*olm.Bundle{
		{Catalog: "c", Package: "p", Name: "p.v1", VersionString: "1.0.0", Image: digestRef("r/p", '1')},
		{Catalog: "c", Package: "p", Name: "p.v0", VersionString: "0.9.0", Image: v0},
	}
	conflict := `Deployment "ns/example-operator" exists and is not managed by OLM: set collisionPolicy IfNoController to adopt it`
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		revision1  string // the image status.history records for the installed revision 1 ("": nothing installed)
		want       metav1.ConditionStatus
		reason     string
		msg        string
	}{
		{"object conflict", []metav1.Condition{c(unp, tr, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked", 2),
			c(inst, f, rukpakv1alpha1.ReasonObjectConflict, conflict, 2)},
			"", f, rukpakv1alpha1.ReasonObjectConflict, `BundleDeployment "op": ` + conflict},
		{"install failed", []metav1.Condition{c(unp, tr, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked", 2),
			c(inst, f, rukpakv1alpha1.ReasonInstallFailed, "boom", 2)},
			"", f, rukpakv1alpha1.ReasonInstallFailed, `BundleDeployment "op": boom`},
		{"upgrade failed: the previous bundle stays", []metav1.Condition{c(unp, tr, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked", 2),
			c(inst, f, rukpakv1alpha1.ReasonUpgradeFailed, "no", 2)},
			v0, f, rukpakv1alpha1.ReasonUpgradeFailed,
			`BundleDeployment "op": no (bundle p.v0 stays installed, version 0.9.0)`},
		{"a reason rukpak adds later is passed through", []metav1.Condition{c(inst, f, "UpgradeBlocked", "paused", 2)},
			"", f, "UpgradeBlocked", `BundleDeployment "op": paused`},
		{"unpack failed", []metav1.Condition{c(unp, f, rukpakv1alpha1.ReasonUnpackFailed, `image "r/p:1" not found`, 2),
			c(inst, f, rukpakv1alpha1.ReasonInstallPending, "nothing is installed until the bundle is unpacked and rendered", 2)},
			"", f, rukpakv1alpha1.ReasonUnpackFailed, `BundleDeployment "op": image "r/p:1" not found`},
		{"invalid bundle while an older generation is installed", []metav1.Condition{c(unp, f, rukpakv1alpha1.ReasonInvalidBundle, "no CSV", 2),
			c(inst, tr, rukpakv1alpha1.ReasonInstallationSucceeded, "revision 1 is installed", 1)},
			v0, f, rukpakv1alpha1.ReasonInvalidBundle,
			`BundleDeployment "op": no CSV (bundle p.v0 stays installed, version 0.9.0)`},
		{"upgrade failed and the installed image is in no catalog", []metav1.Condition{c(unp, tr, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked", 2),
			c(inst, f, rukpakv1alpha1.ReasonUpgradeFailed, "no", 2)},
			removed, f, rukpakv1alpha1.ReasonUpgradeFailed,
			`BundleDeployment "op": no (the bundle at ` + removed + ` stays installed)`},
		{"unsupported install mode", []metav1.Condition{c(unp, f, "UnsupportedInstallMode", "MultiNamespace is not supported", 2),
			c(inst, f, rukpakv1alpha1.ReasonInstallPending, "pending", 2)},
			"", f, "UnsupportedInstallMode", `BundleDeployment "op": MultiNamespace is not supported`},
		{"unpacking", []metav1.Condition{c(unp, unk, rukpakv1alpha1.ReasonUnpackPending, "waiting", 2),
			c(inst, f, rukpakv1alpha1.ReasonInstallPending, "nothing is installed until the bundle is unpacked and rendered", 2)},
			"", f, operatorsv1alpha1.ReasonInstallationPending, `BundleDeployment "op": nothing is installed until the bundle is unpacked and rendered`},
		{"failures of an older generation are not reported", []metav1.Condition{c(unp, f, rukpakv1alpha1.ReasonUnpackFailed, "old", 1),
			c(inst, f, rukpakv1alpha1.ReasonObjectConflict, "old", 1)},
			"", unk, operatorsv1alpha1.ReasonInstallationStatusUnknown, `waiting for BundleDeployment "op" to report on bundle p.v1`},
		{"installed", []metav1.Condition{c(unp, tr, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked", 2),
			c(inst, tr, rukpakv1alpha1.ReasonInstallationSucceeded, "revision 2 is installed", 2)},
			"", tr, operatorsv1alpha1.ReasonInstallationSucceeded, `bundle p.v1 (version 1.0.0) is installed in namespace "ns" by BundleDeployment "op"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2, Annotations: map[string]string{
				AnnotationBundleName: "p.v1", AnnotationBundleVersion: "1.0.0"}}}
			bd.Spec.InstallNamespace = "ns"
			bd.Spec.Source.Image = &rukpakv1alpha1.ImageSource{Ref: digestRef("r/p", '1')}
			bd.Status.Conditions = tc.conditions
			if tc.revision1 != "" {
				bd.Status.InstalledRevision = 1
				bd.Status.History = []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ResolvedSource: resolvedImage(tc.revision1)}}
			}
			// status.installedBundle is output only: garbage there changes nothing.
			op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 5}}
			op.Status.InstalledBundle = &operatorsv1alpha1.BundleMetadata{Name: "p.v1", Version: "1.0.0", Source: "garbage"}
			setStatus(op, observations{outcome: &operators.Outcome{Bundle: &operators.Bundle{Name: "p.v1", Version: "1.0.0"}}, bd: bd, packageBundles: catalog})
			got := cond(op, operatorsv1alpha1.TypeInstalled)
			if got.Status != tc.want || got.Reason != tc.reason || got.Message != tc.msg || got.ObservedGeneration != 5 {
				t.Errorf("Installed = %s %s %q (generation %d); want %s %s %q (generation 5)",
					got.Status, got.Reason, got.Message, got.ObservedGeneration, tc.want, tc.reason, tc.msg)
			}
			var want *operatorsv1alpha1.BundleMetadata
			switch {
			case tc.revision1 == v0:
				want = &operatorsv1alpha1.BundleMetadata{Name: "p.v0", Version: "0.9.0", Catalog: "c", Source: v0}
			case tc.revision1 == removed:
				want = &operatorsv1alpha1.BundleMetadata{Source: removed}
			case tc.want == tr:
				want = &operatorsv1alpha1.BundleMetadata{Name: "p.v1", Version: "1.0.0", Source: digestRef("r/p", '1')}
			}
			if !equality.Semantic.DeepEqual(op.Status.InstalledBundle, want) {
				t.Errorf("installedBundle %+v; want %+v", op.Status.InstalledBundle, want)
			}
		})
	}

	// An error of operator-controller itself (writing the BundleDeployment) stays InstallationFailed.
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}}
	setStatus(op, observations{applyErr: installFailed(errors.New("creating BundleDeployment \"op\": forbidden"))})
	if got := cond(op, operatorsv1alpha1.TypeInstalled); got.Reason != operatorsv1alpha1.ReasonInstallationFailed || !strings.Contains(got.Message, "forbidden") {
		t.Errorf("Installed after a write error: %+v", got)
	}
}

// TestPausedAndLifecycleReasons: spec.paused gives Paused=True (saying since when) and
// Paused=False otherwise; an Operator paused before anything was installed says nothing is
// installed until it is resumed; the BundleDeployment's ProgressDeadlineExceeded and
// RollbackBlocked reasons reach the Operator's Healthy condition as they are.
func TestPausedAndLifecycleReasons(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 1}}
	op.Spec.Paused = true
	setStatus(op, observations{pausedBeforeInstall: true})
	if c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypePaused); c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != operatorsv1alpha1.ReasonPaused || !strings.Contains(c.Message, "paused since ") {
		t.Errorf("Paused: %+v", c)
	}
	if c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeInstalled); c == nil || c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "nothing is installed until it is resumed") {
		t.Errorf("Installed while paused before install: %+v", c)
	}
	op.Spec.Paused = false
	setStatus(op, observations{})
	if c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypePaused); c == nil || c.Status != metav1.ConditionFalse || c.Reason != operatorsv1alpha1.ReasonNotPaused {
		t.Errorf("Paused after resume: %+v", c)
	}
	for _, reason := range []string{rukpakv1alpha1.ReasonProgressDeadlineExceeded, rukpakv1alpha1.ReasonRollbackBlocked} {
		bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 3}}
		bd.Status.Conditions = []metav1.Condition{{Type: rukpakv1alpha1.TypeHealthy, Status: metav1.ConditionFalse, Reason: reason, Message: "revision 2 is not Healthy", ObservedGeneration: 3}}
		setStatus(op, observations{bd: bd})
		if c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeHealthy); c == nil || c.Reason != reason || c.Message != "revision 2 is not Healthy" {
			t.Errorf("Healthy for %s: %+v", reason, c)
		}
	}
}
