package controller

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// digestRef is repo@sha256:<64 times c>.
func digestRef(repo string, c byte) string {
	return repo + "@sha256:" + strings.Repeat(string(c), 64)
}

// resolvedImage is the resolvedSource rukpak records for an image it unpacked.
func resolvedImage(ref string) *rukpakv1alpha1.ResolvedSource {
	return &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: ref}}
}

// TestInstalledBy: what a BundleDeployment has installed comes from its status (Installed for the
// current generation, else the installed revision's image in status.history), not from its
// annotations, which name the bundle it should install.
func TestInstalledBy(t *testing.T) {
	img1, img2 := digestRef("quay.io/org/p-bundle", '1'), digestRef("quay.io/org/p-bundle", '2')
	catalog := []*olm.Bundle{
		{Catalog: "other", Package: "p", Name: "p.v2.0.0", VersionString: "2.0.0", Image: img2},
		{Catalog: "main", Package: "p", Name: "p.v2.0.0", VersionString: "2.0.0", Image: img2},
		{Catalog: "main", Package: "p", Name: "p.v1.0.0", VersionString: "1.0.0", Image: img1},
	}
	// bd asks for 2.0.0 (annotations and spec, generation 2); rukpak's status is set by each case.
	bd := func(spec string, mutate func(*rukpakv1alpha1.BundleDeployment)) *rukpakv1alpha1.BundleDeployment {
		d := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2, Annotations: map[string]string{
			AnnotationPackage: "p", AnnotationBundleName: "p.v2.0.0", AnnotationBundleVersion: "2.0.0", AnnotationCatalog: "main"}}}
		d.Spec.Source.Image = &rukpakv1alpha1.ImageSource{Ref: spec}
		if mutate != nil {
			mutate(d)
		}
		return d
	}
	installedCond := func(s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: s, Reason: reason, ObservedGeneration: gen}
	}
	revision := func(n int64, ref string) func(*rukpakv1alpha1.BundleDeployment) {
		return func(d *rukpakv1alpha1.BundleDeployment) {
			d.Status.InstalledRevision = n
			d.Status.History = append(d.Status.History, rukpakv1alpha1.BundleDeploymentRevision{Revision: n, ResolvedSource: resolvedImage(ref)})
		}
	}
	both := func(fs ...func(*rukpakv1alpha1.BundleDeployment)) func(*rukpakv1alpha1.BundleDeployment) {
		return func(d *rukpakv1alpha1.BundleDeployment) {
			for _, f := range fs {
				f(d)
			}
		}
	}
	conds := func(cs ...metav1.Condition) func(*rukpakv1alpha1.BundleDeployment) {
		return func(d *rukpakv1alpha1.BundleDeployment) { d.Status.Conditions = cs }
	}
	upgradeFailed := conds(installedCond(metav1.ConditionFalse, rukpakv1alpha1.ReasonUpgradeFailed, 2))
	v1 := &operatorsv1alpha1.BundleMetadata{Name: "p.v1.0.0", Version: "1.0.0", Catalog: "main", Source: img1}
	v2 := func(source string) *operatorsv1alpha1.BundleMetadata {
		return &operatorsv1alpha1.BundleMetadata{Name: "p.v2.0.0", Version: "2.0.0", Catalog: "main", Source: source}
	}
	for _, tc := range []struct {
		name    string
		bd      *rukpakv1alpha1.BundleDeployment
		catalog []*olm.Bundle
		state   installedState
		bundle  *operatorsv1alpha1.BundleMetadata
		stays   string
	}{
		{"no BundleDeployment", nil, catalog, nothingInstalled, nil, ""},
		{"nothing installed yet", bd(img2, conds(installedCond(metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending, 2))), catalog, nothingInstalled, nil, ""},
		{"Installed for the current generation: the annotations", bd("quay.io/org/p-bundle:2", conds(installedCond(metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, 2))),
			nil, installedBundleKnown, v2("quay.io/org/p-bundle:2"), " (bundle p.v2.0.0 stays installed, version 2.0.0)"},
		{"failed upgrade: the installed revision's image in the catalog", bd(img2, both(upgradeFailed, revision(1, img1))),
			catalog, installedBundleKnown, v1, " (bundle p.v1.0.0 stays installed, version 1.0.0)"},
		{"pending upgrade (rukpak has not seen generation 2)", bd(img2, both(conds(installedCond(metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, 1)), revision(1, img1))),
			catalog, installedBundleKnown, v1, " (bundle p.v1.0.0 stays installed, version 1.0.0)"},
		{"the installed image is the spec's digest: the annotations, not another catalog's bundle", bd(img2, both(upgradeFailed, revision(3, img2))),
			catalog, installedBundleKnown, v2(img2), " (bundle p.v2.0.0 stays installed, version 2.0.0)"},
		{"the spec's tag resolved to the installed digest for this generation", bd("quay.io/org/p-bundle:2", both(
			conds(installedCond(metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallFailed, 2), metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, ObservedGeneration: 2}),
			revision(1, img2), func(d *rukpakv1alpha1.BundleDeployment) { d.Status.ResolvedSource = resolvedImage(img2) })),
			nil, installedBundleKnown, v2("quay.io/org/p-bundle:2"), " (bundle p.v2.0.0 stays installed, version 2.0.0)"},
		{"paused (generation moved on, nothing re-unpacked): the revision was unpacked from the spec's tag", bd("quay.io/org/p-bundle:2", both(
			conds(installedCond(metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, 1)),
			func(d *rukpakv1alpha1.BundleDeployment) {
				d.Status.InstalledRevision = 1
				d.Status.History = []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ResolvedSource: &rukpakv1alpha1.ResolvedSource{
					Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: img2, Requested: "quay.io/org/p-bundle:2"}}}}
			})),
			nil, installedBundleKnown, v2("quay.io/org/p-bundle:2"), " (bundle p.v2.0.0 stays installed, version 2.0.0)"},
		{"failed upgrade, catalogs name bundles by tag: matched by the reference the revision was unpacked from", bd("quay.io/org/p-bundle:2", both(upgradeFailed,
			func(d *rukpakv1alpha1.BundleDeployment) {
				d.Status.InstalledRevision = 1
				d.Status.History = []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ResolvedSource: &rukpakv1alpha1.ResolvedSource{
					Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: img1, Requested: "quay.io/org/p-bundle:1"}}}}
			})),
			[]*olm.Bundle{
				{Catalog: "main", Package: "p", Name: "p.v2.0.0", VersionString: "2.0.0", Image: "quay.io/org/p-bundle:2"},
				{Catalog: "main", Package: "p", Name: "p.v1.0.0", VersionString: "1.0.0", Image: "quay.io/org/p-bundle:1"},
			},
			installedBundleKnown, &operatorsv1alpha1.BundleMetadata{Name: "p.v1.0.0", Version: "1.0.0", Catalog: "main", Source: "quay.io/org/p-bundle:1"},
			" (bundle p.v1.0.0 stays installed, version 1.0.0)"},
		{"the registry spelled differently", bd(img2, both(upgradeFailed, revision(1, "docker.io/org/p@sha256:"+strings.Repeat("1", 64)))),
			[]*olm.Bundle{{Catalog: "main", Package: "p", Name: "p.v1.0.0", VersionString: "1.0.0", Image: "index.docker.io/org/p@sha256:" + strings.Repeat("1", 64)}},
			installedBundleKnown, &operatorsv1alpha1.BundleMetadata{Name: "p.v1.0.0", Version: "1.0.0", Catalog: "main", Source: "index.docker.io/org/p@sha256:" + strings.Repeat("1", 64)},
			" (bundle p.v1.0.0 stays installed, version 1.0.0)"},
		{"the installed image is in no catalog", bd(img2, both(upgradeFailed, revision(1, img1))), catalog[:2],
			installedImageOnly, &operatorsv1alpha1.BundleMetadata{Source: img1}, " (the bundle at " + img1 + " stays installed)"},
		{"resolution could not run", bd(img2, both(upgradeFailed, revision(1, img1))), nil,
			installedImageOnly, &operatorsv1alpha1.BundleMetadata{Source: img1}, " (the bundle at " + img1 + " stays installed)"},
		{"a revision without history", bd(img2, both(upgradeFailed, func(d *rukpakv1alpha1.BundleDeployment) { d.Status.InstalledRevision = 4 })), catalog,
			installedUnknown, nil, ` (revision 4 of BundleDeployment "op" stays installed)`},
		{"installed for an earlier generation, no revision reported", bd(img2, conds(installedCond(metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, 1))), catalog,
			installedUnknown, nil, ` (what BundleDeployment "op" installed stays installed)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := installedBy(tc.bd, tc.catalog)
			if in.state != tc.state || !equality.Semantic.DeepEqual(in.bundle, tc.bundle) || in.staysInstalled() != tc.stays {
				t.Errorf("got state %d, bundle %+v, %q; want state %d, bundle %+v, %q", in.state, in.bundle, in.staysInstalled(), tc.state, tc.bundle, tc.stays)
			}
		})
	}
}

// TestFailedUpgradeReportsTheInstalledBundleFromTheBundleDeployment: the BundleDeployment is mid
// failed upgrade (its annotations and spec name 2.0.0, rukpak reports UpgradeFailed and its
// installed revision's image is 1.0.0's) and the Operator's status.installedBundle is stale garbage
// naming 2.0.0. A reconcile reports that 1.0.0 stays installed, writes status.installedBundle as
// 1.0.0 and says the approved 2.0.0 is still being installed.
func TestFailedUpgradeReportsTheInstalledBundleFromTheBundleDeployment(t *testing.T) {
	img1, img2 := digestRef("registry.test/pkg-bundle", '1'), digestRef("registry.test/pkg-bundle", '2')
	fbc := `{"schema":"olm.package","name":"pkg","defaultChannel":"stable"}` + "\n" +
		`{"schema":"olm.channel","package":"pkg","name":"stable","entries":[{"name":"pkg.v1.0.0"},{"name":"pkg.v2.0.0","replaces":"pkg.v1.0.0"}]}` + "\n" +
		`{"schema":"olm.bundle","package":"pkg","name":"pkg.v1.0.0","image":"` + img1 + `","properties":[{"type":"olm.package","value":{"packageName":"pkg","version":"1.0.0"}}]}` + "\n" +
		`{"schema":"olm.bundle","package":"pkg","name":"pkg.v2.0.0","image":"` + img2 + `","properties":[{"type":"olm.package","value":{"packageName":"pkg","version":"2.0.0"}}]}` + "\n"

	op := newOperator("op")
	op.Finalizers = []string{Finalizer}
	op.Spec.UpgradePolicy, op.Spec.ApprovedVersion = operatorsv1alpha1.UpgradePolicyManual, "2.0.0"
	op.Status.InstalledBundle = &operatorsv1alpha1.BundleMetadata{Name: "pkg.v2.0.0", Version: "2.0.0", Catalog: "main", Source: "garbage"}

	bd, err := desiredBundleDeployment(op, &operators.Bundle{Name: "pkg.v2.0.0", Package: "pkg", Version: "2.0.0", Catalog: "main", Image: img2}, "pkg", nil)
	if err != nil {
		t.Fatal(err)
	}
	bd.Generation = 2
	upgradeFailed := `revision 2 was not Healthy within the progress deadline (10m0s): Deployment pkg/pkg is not ready (revision 1 stays installed)`
	bd.Status = rukpakv1alpha1.BundleDeploymentStatus{
		ObservedGeneration: 2,
		Conditions: []metav1.Condition{
			{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonUnpackSucceeded, Message: "unpacked image " + img2, ObservedGeneration: 2},
			{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonUpgradeFailed, Message: upgradeFailed, ObservedGeneration: 2},
			{Type: rukpakv1alpha1.TypeHealthy, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonHealthy, Message: "every installed object is ready", ObservedGeneration: 2},
		},
		ResolvedSource:    resolvedImage(img2),
		InstalledRevision: 1,
		History: []rukpakv1alpha1.BundleDeploymentRevision{
			{Revision: 1, ResolvedSource: resolvedImage(img1), InstalledAt: metav1.Now(), HealthyAt: &metav1.Time{}},
		},
	}
	h := newReconcilerHarness(t, op, bd)
	h.content.set(fbc, nil)
	if _, err := h.reconcile(t, "op"); err != nil {
		t.Fatal(err)
	}

	got := h.operator(t, "op")
	if c := cond(got, operatorsv1alpha1.TypeInstalled); c.Status != metav1.ConditionFalse || c.Reason != rukpakv1alpha1.ReasonUpgradeFailed ||
		c.Message != `BundleDeployment "op": `+upgradeFailed+" (bundle pkg.v1.0.0 stays installed, version 1.0.0)" {
		t.Errorf("Installed %+v; want UpgradeFailed saying pkg.v1.0.0 (version 1.0.0) stays installed", c)
	}
	// The installed bundle is found in the catalog by its image: its properties come from there.
	want := &operatorsv1alpha1.BundleMetadata{Name: "pkg.v1.0.0", Version: "1.0.0", Catalog: "main", Source: img1,
		Properties: []operatorsv1alpha1.BundleProperty{{Type: "olm.package", Value: `{"packageName":"pkg","version":"1.0.0"}`}}}
	if !equality.Semantic.DeepEqual(got.Status.InstalledBundle, want) {
		t.Errorf("installedBundle %+v; want %+v", got.Status.InstalledBundle, want)
	}
	if c := cond(got, operatorsv1alpha1.TypeUpgradeAvailable); c.Reason != operatorsv1alpha1.ReasonUpgradeApproved {
		t.Errorf("UpgradeAvailable %+v; want UpgradeApproved (2.0.0 is approved, 1.0.0 is installed)", c)
	}
	if rb := got.Status.ResolvedBundle; rb == nil || rb.Version != "2.0.0" {
		t.Errorf("resolvedBundle %+v", rb)
	}
	after := &rukpakv1alpha1.BundleDeployment{}
	if err := h.c.Get(t.Context(), types.NamespacedName{Name: "op"}, after); err != nil {
		t.Fatal(err)
	}
	if after.Spec.Source.Image.Ref != img2 {
		t.Errorf("the BundleDeployment moved to %s", after.Spec.Source.Image.Ref)
	}
}
