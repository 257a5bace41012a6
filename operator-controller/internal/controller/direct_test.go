package controller

import (
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func directOperator(format operatorsv1alpha1.BundleFormat, src rukpakv1alpha1.Source) *operatorsv1alpha1.Operator {
	return &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op", UID: "uid", Generation: 1},
		Spec: operatorsv1alpha1.OperatorSpec{Source: &operatorsv1alpha1.OperatorSource{
			Type: operatorsv1alpha1.SourceTypeBundle, Bundle: &operatorsv1alpha1.DirectBundle{Format: format, Source: src}}}}
}

func imageSource() rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "r.test/b:1"}}
}

func TestProvisionerForFormat(t *testing.T) {
	for f, want := range map[operatorsv1alpha1.BundleFormat]rukpakv1alpha1.ProvisionerClassName{
		"": rukpakv1alpha1.ProvisionerRegistry, operatorsv1alpha1.BundleFormatRegistryV1: rukpakv1alpha1.ProvisionerRegistry,
		operatorsv1alpha1.BundleFormatPlain: rukpakv1alpha1.ProvisionerPlain, operatorsv1alpha1.BundleFormatHelm: rukpakv1alpha1.ProvisionerHelm,
		operatorsv1alpha1.BundleFormatKustomize: rukpakv1alpha1.ProvisionerKustomize,
	} {
		if got, err := provisionerForFormat(f); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", f, got, err, want)
		}
	}
	if _, err := provisionerForFormat("Zip"); err == nil || !strings.Contains(err.Error(), "want RegistryV1, Plain, Helm or Kustomize") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestDescribeSource(t *testing.T) {
	for _, tt := range []struct {
		src  rukpakv1alpha1.Source
		want string
	}{
		{imageSource(), "r.test/b:1"},
		{rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{Repository: "https://g.test/r.git", Ref: rukpakv1alpha1.GitRef{Branch: "main"}}}, "git https://g.test/r.git branch main"},
		{rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{Repository: "https://g.test/r.git", Ref: rukpakv1alpha1.GitRef{Commit: "abc"}, Directory: "d"}}, "git https://g.test/r.git commit abc directory d"},
		{rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{URL: "https://h.test/b.tgz"}}, "https://h.test/b.tgz"},
		{rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "a"}}, {ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "b"}}}}, "configmaps a, b"},
	} {
		if got := describeSource(&tt.src); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// The direct bundle's BundleDeployment is the Operator's source with the format's provisioner and
// the same settings, ownership and labels as a resolved bundle's; the catalog annotations are empty.
func TestDesiredDirectBundleDeployment(t *testing.T) {
	op := directOperator(operatorsv1alpha1.BundleFormatKustomize, imageSource())
	op.Spec.Config = &rukpakv1alpha1.BundleConfig{Path: "overlays/prod"}
	op.Spec.Paused, op.Spec.DeletionPolicy = true, rukpakv1alpha1.DeletionPolicyOrphan
	bd, err := desiredDirectBundleDeployment(op, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerKustomize || bd.Spec.Source.Image.Ref != "r.test/b:1" || bd.Spec.InstallNamespace != "ns" ||
		bd.Spec.Config.Path != "overlays/prod" || !bd.Spec.Paused || bd.Spec.DeletionPolicy != rukpakv1alpha1.DeletionPolicyOrphan ||
		bd.Spec.CollisionPolicy != rukpakv1alpha1.CollisionPolicyPrevent {
		t.Errorf("spec %+v", bd.Spec)
	}
	if !metav1.IsControlledBy(bd, op) || bd.Labels[LabelOwnerName] != "op" {
		t.Errorf("ownership %v %v", bd.OwnerReferences, bd.Labels)
	}
	for _, a := range []string{AnnotationBundleName, AnnotationBundleVersion, AnnotationCatalog, AnnotationPackage} {
		if v, ok := bd.Annotations[a]; !ok || v != "" {
			t.Errorf("annotation %s = %q, %v: want it written empty", a, v, ok)
		}
	}
	// The Operator's source is copied, not shared.
	op.Spec.Source.Bundle.Source.Image.Ref = "changed"
	if bd.Spec.Source.Image.Ref != "r.test/b:1" {
		t.Error("the BundleDeployment shares the Operator's source")
	}

	op.Spec.WatchNamespaces = []string{"a"}
	if _, err := desiredDirectBundleDeployment(op, "ns"); err == nil || !strings.Contains(err.Error(), "the bundle at changed is installed by core-rukpak-io-kustomize, which does not use watchNamespaces") {
		t.Errorf("watchNamespaces with a kustomization: %v", err)
	}
	if got := installNamespace(op, nil, nil); got != "op" {
		t.Errorf("install namespace without packageName: %q, want the Operator's name", got)
	}
}

func TestInstalledDirect(t *testing.T) {
	digest := "r.test/b@sha256:" + strings.Repeat("a", 64)
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2}}
	if in := installedDirect(bd); in.something() {
		t.Errorf("nothing installed: %+v", in)
	}
	bd.Status.InstalledRevision = 1
	if in := installedDirect(bd); in.state != installedUnknown {
		t.Errorf("a revision without history: %+v", in)
	}
	bd.Status.History = []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ResolvedSource: &rukpakv1alpha1.ResolvedSource{
		Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: digest}}}}
	if in := installedDirect(bd); in.state != installedImageOnly || in.bundle.Source != digest || !strings.Contains(in.staysInstalled(), digest) {
		t.Errorf("image revision: %+v", in)
	}
	bd.Status.History[0].ResolvedSource = &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.ResolvedGitSource{Repository: "https://g.test/r.git", Commit: "c0ffee"}}
	if in := installedDirect(bd); in.bundle == nil || in.bundle.Source != "git https://g.test/r.git at c0ffee" {
		t.Errorf("git revision: %+v", in.bundle)
	}
}

// A direct Operator's status: Resolved=True DirectBundle naming the source and saying dependencies
// are not installed, nothing deprecated, no upgrade from catalogs; Installed from the
// BundleDeployment like any other.
func TestSetStatusDirect(t *testing.T) {
	op := directOperator("", imageSource())
	bd, err := desiredDirectBundleDeployment(op, "ns")
	if err != nil {
		t.Fatal(err)
	}
	bd.Generation = 1
	bd.Status.Conditions = []metav1.Condition{{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonInstallationSucceeded, ObservedGeneration: 1}}
	setStatus(op, observations{direct: true, bd: bd, namespace: "ns"})
	for _, want := range []struct{ t, reason, msg string }{
		{operatorsv1alpha1.TypeResolved, operatorsv1alpha1.ReasonDirectBundle, "no resolution: installs r.test/b:1 directly"},
		{operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.ReasonInstallationSucceeded, `the bundle at r.test/b:1 is installed in namespace "ns"`},
		{operatorsv1alpha1.TypeDeprecated, operatorsv1alpha1.ReasonNotDeprecated, "no catalog"},
		{operatorsv1alpha1.TypeUpgradeAvailable, operatorsv1alpha1.ReasonUpToDate, "changing spec.source.bundle.source"},
		{operatorsv1alpha1.TypeHealthy, operatorsv1alpha1.ReasonHealthUnknown, ""},
		{operatorsv1alpha1.TypePaused, operatorsv1alpha1.ReasonNotPaused, ""},
	} {
		c := apimeta.FindStatusCondition(op.Status.Conditions, want.t)
		if c == nil || c.Reason != want.reason || !strings.Contains(c.Message, want.msg) {
			t.Errorf("%s: %+v, want reason %s and %q", want.t, c, want.reason, want.msg)
		}
	}
	if op.Status.ResolvedBundle == nil || op.Status.ResolvedBundle.Source != "r.test/b:1" || op.Status.InstallNamespace != "ns" {
		t.Errorf("status %+v", op.Status)
	}
}
