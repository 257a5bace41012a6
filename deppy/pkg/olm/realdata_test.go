package olm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// communityCatalog is the real catalog these tests and benchmarks use.
const communityCatalog = "community-v4.20"

// testdataDir returns the shared real test data: $OLMV1_TESTDATA, or
// ../../shared/testdata from the deppy module directory.
func testdataDir(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv("OLMV1_TESTDATA"); dir != "" {
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "..", "shared", "testdata")
		}
		if filepath.Dir(dir) == dir {
			tb.Fatalf("no go.mod above %s", wd)
		}
	}
}

var community struct {
	once sync.Once
	cfg  *declcfg.DeclarativeConfig
	idx  *Index
	err  error
}

// communityIndex loads community-v4.20 once per test binary, or skips.
func communityIndex(tb testing.TB) (*Index, *declcfg.DeclarativeConfig) {
	tb.Helper()
	dir := filepath.Join(testdataDir(tb), "catalogs", communityCatalog)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("real catalog %s is absent (set OLMV1_TESTDATA to the shared testdata folder to run this): %v", dir, err)
	}
	community.once.Do(func() {
		community.cfg, community.err = declcfg.LoadFS(context.Background(), os.DirFS(dir))
		if community.err != nil {
			return
		}
		var cat *Catalog
		if cat, community.err = NewCatalog(communityCatalog, 0, community.cfg); community.err != nil {
			return
		}
		community.idx, community.err = NewIndex(cat)
	})
	if community.err != nil {
		tb.Fatalf("loading %s: %v", dir, community.err)
	}
	return community.idx, community.cfg
}

func TestRealCatalogResolvesEveryPackage(t *testing.T) {
	idx, _ := communityIndex(t)
	pkgs := idx.Packages()
	if len(pkgs) != 37 {
		t.Fatalf("%s has %d packages, want 37", communityCatalog, len(pkgs))
	}
	var resolved, dependencies []string
	failed := map[string]string{}
	for _, pkg := range pkgs {
		res, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{require(pkg)}})
		if err != nil {
			var ns *resolve.NotSatisfiableError
			if !errors.As(err, &ns) {
				t.Fatalf("%s: unexpected error: %v", pkg, err)
			}
			if len(ns.Summary) == 0 || len(ns.Reasons()) == 0 {
				t.Errorf("%s: explanation without summary or reasons: %s", pkg, ns.Details())
			}
			failed[pkg] = strings.Join(ns.Summary, "; ")
			continue
		}
		resolved = append(resolved, pkg)
		sel := res.Package(pkg)
		if sel == nil || sel.Reason != SelectedRequired {
			t.Errorf("%s: resolved without a selection for itself: %+v", pkg, res.Selections)
			continue
		}
		// The preferred bundle (non-deprecated, default channel, newest) wins
		// when nothing else constrains.
		if want := preferred(idx.Bundles(pkg), "")[0]; len(res.Selections) == 1 && sel.Bundle != want.Name {
			t.Errorf("%s: chose %s, want the preferred %s", pkg, sel.Bundle, want.Name)
		}
		for _, s := range res.Selections[1:] {
			dependencies = append(dependencies, pkg+" -> "+s.Package+"@"+s.Version)
		}
	}
	t.Logf("%s: %d of %d packages resolve on their own", communityCatalog, len(resolved), len(pkgs))
	for _, d := range dependencies {
		t.Logf("  dependency pulled in: %s", d)
	}
	for pkg, why := range failed {
		t.Logf("  %s does not resolve: %s", pkg, why)
	}
	// Measured on this catalog: only alloydb-omni-operator fails (it needs
	// cert-manager's APIs, which this catalog does not carry).
	if len(resolved) < 36 {
		t.Errorf("only %d packages resolve, want at least 36", len(resolved))
	}
	if why, ok := failed["alloydb-omni-operator"]; !ok || !strings.Contains(why, "cert-manager.io/v1") {
		t.Errorf("alloydb-omni-operator: want a failure naming the missing cert-manager.io/v1 API, got %q", why)
	}
	if !containsString(dependencies, "rabbitmq-messaging-topology-operator -> rabbitmq-cluster-operator@") {
		t.Errorf("rabbitmq-messaging-topology-operator should pull in rabbitmq-cluster-operator; dependencies: %v", dependencies)
	}
}

func TestRealCatalogResolvesTogether(t *testing.T) {
	idx, _ := communityIndex(t)
	var reqs []Requirement
	for _, pkg := range idx.Packages() {
		if pkg != "alloydb-omni-operator" {
			reqs = append(reqs, require(pkg))
		}
	}
	res, err := Resolve(t.Context(), idx, Problem{Requirements: reqs})
	if err != nil {
		var ns *resolve.NotSatisfiableError
		if errors.As(err, &ns) {
			t.Fatalf("the %d packages that resolve alone do not resolve together:\n%s", len(reqs), ns.Details())
		}
		t.Fatal(err)
	}
	if len(res.Selections) != len(reqs) {
		t.Errorf("got %d selections for %d requirements", len(res.Selections), len(reqs))
	}
	t.Logf("%d packages resolve together in one problem", len(reqs))
}

func TestRealCatalogUpgradeEdges(t *testing.T) {
	idx, _ := communityIndex(t)
	moved, stayed := 0, 0
	for _, pkg := range idx.Packages() {
		if pkg == "alloydb-omni-operator" {
			continue
		}
		bundles := idx.Bundles(pkg)
		oldest := bundles[len(bundles)-1]
		res, err := Resolve(t.Context(), idx, Problem{
			Requirements: []Requirement{require(pkg)},
			Installed:    []InstalledBundle{{Package: pkg, Version: oldest.Version.String(), BundleName: oldest.Name}},
		})
		if err != nil {
			t.Errorf("%s installed at %s: %v", pkg, oldest.VersionString, err)
			continue
		}
		sel := res.Package(pkg)
		if sel.InstalledVersion != oldest.VersionString {
			t.Errorf("%s: installed version %q, want %q", pkg, sel.InstalledVersion, oldest.VersionString)
		}
		if sel.Bundle == oldest.Name {
			stayed++
			continue
		}
		moved++
		// Whatever was chosen must be a direct successor of the installed bundle.
		if !upgradesFrom(sel.BundleInfo(), oldest.Name, &oldest.Version, nil) {
			t.Errorf("%s: %s is not an upgrade edge from %s", pkg, sel.Bundle, oldest.Name)
		}
	}
	t.Logf("installed at their oldest bundle: %d packages upgrade one edge, %d have no edge out and stay", moved, stayed)
	if moved < 25 {
		t.Errorf("only %d packages found an upgrade edge from their oldest bundle, want at least 25", moved)
	}
}

func containsString(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
