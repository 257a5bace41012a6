package operators

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// sharedTestdata is $OLMV1_TESTDATA, by default ../shared/testdata next to the repository root
// (../../../../shared/testdata from this package).
func sharedTestdata() string {
	if root := os.Getenv("OLMV1_TESTDATA"); root != "" {
		return root
	}
	return filepath.Join("..", "..", "..", "..", "shared", "testdata")
}

// communityDir returns the shared test data's catalogs/community-v4.20, skipping when absent.
func communityDir(t testing.TB) string {
	t.Helper()
	root := sharedTestdata()
	dir := filepath.Join(root, "catalogs", "community-v4.20")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real catalog %s is absent (set OLMV1_TESTDATA to the shared testdata folder to run this): %v", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestRealCatalogChannelRuleMatchesDeppyCLI checks on community-v4.20 that, with no channel given,
// operator-controller's resolver and `deppy resolve` choose the same bundle, and that on the
// packages where "highest version of any channel" and "default channel first" differ, both follow
// the default channel.
//
// Every package is resolved on its own through the library call `deppy resolve` makes (olm.Resolve
// of the parsed --require) and through Resolve, with an Operator for the package and for each
// dependency deppy pulls in (operator-controller installs dependencies only through Operators).
// The deppy binary itself then resolves every package that resolves alone, all in one problem, and
// so does Resolve. One catalog load and one CLI run keep this at a few seconds.
func TestRealCatalogChannelRuleMatchesDeppyCLI(t *testing.T) {
	dir := communityDir(t)
	go buildDeppy() // while the catalog loads
	ctx := context.Background()
	cat, err := olm.LoadCatalogDir(ctx, "", 0, dir) // named after the directory, as the CLI names it
	if err != nil {
		t.Fatal(err)
	}
	idx, err := olm.NewIndex(cat)
	if err != nil {
		t.Fatal(err)
	}

	// Where the two rules differ: the highest version over all channels is not the default
	// channel's head (its highest version). Deprecated bundles come last under both rules.
	best := func(pkg string, ok func(*olm.Bundle) bool) *olm.Bundle {
		var found *olm.Bundle
		for _, b := range idx.Bundles(pkg) { // newest first
			if !ok(b) {
				continue
			}
			if found == nil || (found.Deprecated() && !b.Deprecated()) {
				found = b
			}
		}
		return found
	}
	differ := map[string]*olm.Bundle{} // package → default channel's head
	for _, pkg := range idx.Packages() {
		highest := best(pkg, func(*olm.Bundle) bool { return true })
		head := best(pkg, (*olm.Bundle).InDefaultChannel)
		if head != nil && highest.Name != head.Name {
			differ[pkg] = head
			t.Logf("%s: highest version %s (channels %s), default channel's head %s", pkg,
				highest.VersionString, strings.Join(highest.Channels, ","), head.VersionString)
		}
	}
	if len(differ) == 0 {
		t.Fatal("no package of community-v4.20 has a version outside its default channel higher than the default channel's head; the test proves nothing")
	}

	// Each package on its own.
	var together []Request
	for _, pkg := range idx.Packages() {
		req, err := olm.ParseRequirement(pkg) // what `deppy resolve --require PKG` does
		if err != nil {
			t.Fatal(err)
		}
		res, libErr := olm.Resolve(ctx, idx, olm.Problem{Requirements: []olm.Requirement{req}})
		reqs := []Request{{Name: pkg, Package: pkg}}
		if libErr == nil {
			for i, s := range res.Selections[1:] {
				reqs = append(reqs, Request{Name: s.Package, Package: s.Package, Order: int64(i + 1)})
			}
		}
		got := Resolve(ctx, idx, reqs)
		if libErr != nil {
			if got[pkg].Bundle != nil {
				t.Errorf("%s: deppy finds no solution (%v) but operator-controller chooses %s", pkg, libErr, got[pkg].Bundle.Name)
			}
			continue
		}
		for _, s := range res.Selections {
			o := got[s.Package]
			switch {
			case o.Bundle == nil:
				t.Errorf("%s: deppy chooses %s for %s, operator-controller none: %s", pkg, s.Bundle, s.Package, o.Message)
			case o.Bundle.Name != s.Bundle || o.Bundle.Catalog != s.Catalog:
				t.Errorf("%s: deppy chooses %s for %s, operator-controller %s", pkg, s.Bundle, s.Package, o.Bundle.Name)
			}
		}
		if head := differ[pkg]; head != nil && res.Selections[0].Bundle != head.Name {
			t.Errorf("%s: chose %s, want the default channel's head %s", pkg, res.Selections[0].Bundle, head.Name)
		}
		together = append(together, Request{Name: pkg, Package: pkg, Order: int64(len(together))})
	}

	// The real CLI, every package that resolves alone in one problem.
	deppy := deppyBinary(t)
	cli := runDeppyResolve(t, deppy, []string{dir}, together)
	if cli == nil {
		t.Fatalf("deppy resolve finds no solution for the %d packages that resolve alone", len(together))
	}
	got := Resolve(ctx, idx, together)
	for _, r := range together {
		s, o := cli[r.Name], got[r.Name]
		switch {
		case o.Bundle == nil:
			t.Errorf("%s: deppy resolve chooses %s, operator-controller none: %s", r.Name, s.Bundle, o.Message)
		case s.Bundle != o.Bundle.Name || s.Catalog != o.Bundle.Catalog:
			t.Errorf("%s: deppy resolve chooses %s, operator-controller %s", r.Name, s.Bundle, o.Bundle.Name)
		}
		if head := differ[r.Name]; head != nil && s.Bundle != head.Name {
			t.Errorf("%s: deppy resolve chose %s, want the default channel's head %s", r.Name, s.Bundle, head.Name)
		}
	}
	t.Logf("%d packages: deppy resolve and operator-controller agree alone and together (%d resolve); the rules differ on %d",
		len(idx.Packages()), len(together), len(differ))
}
