package controller

import (
	"errors"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// setStatus with what the installed direct bundle declares: name, version and properties in
// installedBundle, the dependencies in status, the missing ones in the Resolved message; a failed
// read clears them and says why; no BundleDeployment at all clears them; a catalog Operator has none.
func TestSetStatusDirectDeclared(t *testing.T) {
	op := directOperator("", imageSource())
	bd, err := desiredDirectBundleDeployment(op, "ns")
	if err != nil {
		t.Fatal(err)
	}
	rs := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: "r.test/b@sha256:" + strings.Repeat("1", 64)}}
	bd.Status.InstalledRevision, bd.Status.History = 1, []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ResolvedSource: rs, InstalledAt: metav1.Now()}}
	rep := &directReport{after: retryInspect, facts: &BundleFacts{Package: "gadget", Version: "1.2.0", CSVName: "gadget.v1.2.0",
		Requires:    []Requirement{{Type: propertyPackageRequired, Package: "sprocket", VersionRange: ">=1.0.0"}, {Type: propertyGVKRequired, Group: "cogs.example.com", Version: "v1", Kind: "Cog"}},
		Unsupported: []string{"olm.constraint"}},
		declared: []operatorsv1alpha1.DeclaredDependency{
			{Type: propertyPackageRequired, Value: "sprocket >=1.0.0", Status: operatorsv1alpha1.DependencyPresent},
			{Type: propertyGVKRequired, Value: "cogs.example.com/v1 Cog", Status: operatorsv1alpha1.DependencyMissing},
		}}
	setStatus(op, observations{direct: true, bd: bd, namespace: "ns", directReport: rep})
	c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeResolved)
	for _, want := range []string{"the installed bundle is package gadget version 1.2.0 (gadget.v1.2.0)", "declares 2 dependencies",
		"missing on the cluster: olm.gvk.required cogs.example.com/v1 Cog", "not checked: its olm.constraint dependencies"} {
		if c == nil || !strings.Contains(c.Message, want) {
			t.Errorf("Resolved message lacks %q: %+v", want, c)
		}
	}
	ib := op.Status.InstalledBundle
	if ib == nil || ib.Name != "gadget.v1.2.0" || ib.Version != "1.2.0" || ib.Source != rs.Image.Ref || len(ib.Properties) != 3 ||
		ib.Properties[1].Value != `{"packageName":"sprocket","versionRange":">=1.0.0"}` || ib.Properties[2].Value != `{"group":"cogs.example.com","kind":"Cog","version":"v1"}` {
		t.Errorf("installedBundle %+v", ib)
	}
	if len(op.Status.DeclaredDependencies) != 2 || rep.recheck() != retryInspect {
		t.Errorf("declaredDependencies %+v, recheck %s", op.Status.DeclaredDependencies, rep.recheck())
	}

	// The content could not be read: said, and the dependencies cleared.
	setStatus(op, observations{direct: true, bd: bd, directReport: &directReport{readErr: errors.New("pull: denied"), after: retryInspect}})
	if c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeResolved); !strings.Contains(c.Message, "could not be read from its content: pull: denied (tried again in 1m0s)") ||
		op.Status.DeclaredDependencies != nil {
		t.Errorf("after a failed read: %q %+v", c.Message, op.Status.DeclaredDependencies)
	}
	// No BundleDeployment (paused before the install): nothing to report, no panic.
	op.Status.DeclaredDependencies = rep.declared
	setStatus(op, observations{direct: true, pausedBeforeInstall: true})
	if op.Status.DeclaredDependencies != nil {
		t.Errorf("without a BundleDeployment: %+v", op.Status.DeclaredDependencies)
	}
	// All present: the message says so, nothing to recheck.
	all := &directReport{facts: rep.facts, after: retryInspect, declared: []operatorsv1alpha1.DeclaredDependency{{Type: propertyPackageRequired, Value: "x", Status: operatorsv1alpha1.DependencyPresent}}}
	if !strings.Contains(all.message(), "the cluster has all of them") || all.recheck() != 0 || (*directReport)(nil).recheck() != 0 {
		t.Errorf("all present: %q %s", all.message(), all.recheck())
	}
}

func TestPinnedSource(t *testing.T) {
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "r.test/b:1", PullSecret: "s", Verify: &rukpakv1alpha1.ImageVerification{}}}
	got := pinnedSource(src, &rukpakv1alpha1.ResolvedSource{Image: &rukpakv1alpha1.ResolvedImageSource{Ref: "r.test/b@sha256:1"}})
	if got.Image.Ref != "r.test/b@sha256:1" || got.Image.Verify != nil || got.Image.PullSecret != "s" || src.Image.Ref != "r.test/b:1" || src.Image.Verify == nil {
		t.Errorf("image: %+v (spec %+v)", got.Image, src.Image)
	}
	git := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{Repository: "https://g.test/r.git", Ref: rukpakv1alpha1.GitRef{Branch: "main"}, Directory: "b"}}
	got = pinnedSource(git, &rukpakv1alpha1.ResolvedSource{Git: &rukpakv1alpha1.ResolvedGitSource{Commit: "abc"}})
	if got.Git.Ref.Commit != "abc" || got.Git.Ref.Branch != "" || got.Git.Directory != "b" {
		t.Errorf("git: %+v", got.Git)
	}
}
