package operators

import (
	"context"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// compositeFBC: hub 1.0.0 needs the APIs Alpha and Beta, hub 1.1.0 only Alpha; alpha provides Alpha
// and needs package base; beta provides Beta; base provides nothing anyone else needs.
const compositeFBC = `
{"schema":"olm.package","name":"hub","defaultChannel":"stable"}
{"schema":"olm.channel","package":"hub","name":"stable","entries":[{"name":"hub.v1.0.0"},{"name":"hub.v1.1.0","replaces":"hub.v1.0.0"}]}
{"schema":"olm.bundle","package":"hub","name":"hub.v1.0.0","image":"registry.test/hub:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"hub","version":"1.0.0"}},{"type":"olm.gvk.required","value":{"group":"composite.test","version":"v1","kind":"Alpha"}},{"type":"olm.gvk.required","value":{"group":"composite.test","version":"v1","kind":"Beta"}}]}
{"schema":"olm.bundle","package":"hub","name":"hub.v1.1.0","image":"registry.test/hub:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"hub","version":"1.1.0"}},{"type":"olm.gvk.required","value":{"group":"composite.test","version":"v1","kind":"Alpha"}}]}
{"schema":"olm.package","name":"alpha","defaultChannel":"stable"}
{"schema":"olm.channel","package":"alpha","name":"stable","entries":[{"name":"alpha.v1.0.0"}]}
{"schema":"olm.bundle","package":"alpha","name":"alpha.v1.0.0","image":"registry.test/alpha:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"alpha","version":"1.0.0"}},{"type":"olm.gvk","value":{"group":"composite.test","version":"v1","kind":"Alpha"}},{"type":"olm.package.required","value":{"packageName":"base","versionRange":">=1.0.0"}}]}
{"schema":"olm.package","name":"beta","defaultChannel":"stable"}
{"schema":"olm.channel","package":"beta","name":"stable","entries":[{"name":"beta.v1.0.0"}]}
{"schema":"olm.bundle","package":"beta","name":"beta.v1.0.0","image":"registry.test/beta:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"beta","version":"1.0.0"}},{"type":"olm.gvk","value":{"group":"composite.test","version":"v1","kind":"Beta"}}]}
{"schema":"olm.package","name":"base","defaultChannel":"stable"}
{"schema":"olm.channel","package":"base","name":"stable","entries":[{"name":"base.v1.2.0"}]}
{"schema":"olm.bundle","package":"base","name":"base.v1.2.0","image":"registry.test/base:1.2.0","properties":[{"type":"olm.package","value":{"packageName":"base","version":"1.2.0"}}]}
`

func compositeIndex(t *testing.T) *olm.Index {
	t.Helper()
	idx, err := olm.NewIndex(loadCatalog(t, "composite", 0, compositeFBC))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func depList(ds []Dependency) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Package+"@"+d.Version+" op="+d.Operator+" by "+d.Requirement)
	}
	return out
}

// TestRequireNamesEveryMissingDependency: without InstallDependencies a bundle whose dependencies no
// Operator installs fails, and the message names each missing package.
func TestRequireNamesEveryMissingDependency(t *testing.T) {
	out := Resolve(context.Background(), compositeIndex(t), []Request{{Name: "hub", Package: "hub", VersionRange: "1.0.0"}})
	o := out["hub"]
	if o.Bundle != nil {
		t.Fatalf("resolved to %s; want a failure", o.Bundle.Name)
	}
	for _, want := range []string{`no Operator installs: "alpha", "base", "beta"`, "dependencyPolicy: Install"} {
		if !strings.Contains(o.Message, want) {
			t.Errorf("message does not name %s:\n%s", want, o.Message)
		}
	}
}

// TestInstallDependencies: with InstallDependencies the dependencies come from packages no request
// names (transitively), each listed with the requirement that pulled it in; a package a request
// installs is named with that request.
func TestInstallDependencies(t *testing.T) {
	idx := compositeIndex(t)
	out := Resolve(context.Background(), idx, []Request{{Name: "hub", Package: "hub", VersionRange: "1.0.0", InstallDependencies: true}})
	o := out["hub"]
	if o.Bundle == nil {
		t.Fatalf("no bundle: %s", o.Message)
	}
	got := strings.Join(depList(o.Bundle.Dependencies), "\n")
	want := "alpha@1.0.0 op= by olm.gvk.required composite.test/v1 Alpha\nbeta@1.0.0 op= by olm.gvk.required composite.test/v1 Beta"
	if got != want {
		t.Errorf("dependencies:\n%s\nwant:\n%s", got, want)
	}

	// Once Operators exist for them (as operator-controller creates them, with InstallDependencies
	// too), each is named, and alpha's own dependency on base is allowed through it.
	out = Resolve(context.Background(), idx, []Request{
		{Name: "hub", Package: "hub", VersionRange: "1.0.0", InstallDependencies: true, Order: 1},
		{Name: "my-alpha", Package: "alpha", InstallDependencies: true, Order: 2},
		{Name: "beta", Package: "beta", InstallDependencies: true, Order: 3},
	})
	for _, name := range []string{"hub", "my-alpha", "beta"} {
		if out[name].Bundle == nil {
			t.Fatalf("%s: no bundle: %s", name, out[name].Message)
		}
	}
	if got := strings.Join(depList(out["hub"].Bundle.Dependencies), "\n"); got != "alpha@1.0.0 op=my-alpha by olm.gvk.required composite.test/v1 Alpha\nbeta@1.0.0 op=beta by olm.gvk.required composite.test/v1 Beta" {
		t.Errorf("hub's dependencies with Operators for them:\n%s", got)
	}
	if got := strings.Join(depList(out["my-alpha"].Bundle.Dependencies), "\n"); got != `base@1.2.0 op= by olm.package.required base >=1.0.0` {
		t.Errorf("alpha's dependencies:\n%s", got)
	}

	// The upgrade to 1.1.0 no longer needs beta.
	out = Resolve(context.Background(), idx, []Request{{Name: "hub", Package: "hub", VersionRange: "1.1.0", InstallDependencies: true}})
	if got := strings.Join(depList(out["hub"].Bundle.Dependencies), "\n"); got != "alpha@1.0.0 op= by olm.gvk.required composite.test/v1 Alpha" {
		t.Errorf("hub 1.1.0's dependencies:\n%s", got)
	}
}

// TestInstallDependenciesDoesNotWidenOtherRequests: a request without InstallDependencies still
// cannot take its dependencies from packages no Operator installs, even when another request may.
func TestInstallDependenciesDoesNotWidenOtherRequests(t *testing.T) {
	out := Resolve(context.Background(), compositeIndex(t), []Request{
		{Name: "hub", Package: "hub", VersionRange: "1.1.0", InstallDependencies: true, Order: 1},
		{Name: "beta-user", Package: "beta", Order: 2},
	})
	if out["hub"].Bundle == nil || out["beta-user"].Bundle == nil {
		t.Fatalf("hub: %s; beta-user: %s", out["hub"].Message, out["beta-user"].Message)
	}
}
