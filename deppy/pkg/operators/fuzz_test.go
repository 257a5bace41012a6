package operators

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mmsemver "github.com/Masterminds/semver/v3"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// FuzzVersionRange resolves an Operator whose spec.version (and installed and approved versions,
// upgrade policy, constraint policy and channel) are arbitrary, against the test catalogs. For any
// input: no panic; the same outcome twice; a spec.version that Masterminds semver cannot parse is
// reported as such, naming spec.version; and a bundle chosen for an Operator that is not on Manual
// upgrades is in the range.
//
// (The Operator CRD also checks spec.version with a CEL regular expression; there is no Go copy of
// it to compare with, so this target checks the parser alone.)
func FuzzVersionRange(f *testing.F) {
	for _, r := range []string{
		"", "1.0.0", ">=0.2.0", "<1.0.0", ">=0.1.0 <0.3.0", "0.3.x", "~0.2", "^0", "0.1.0 || 1.0.0", ">= 0.1.0, < 1",
		"0.1.0 - 0.2.0", "v1", "=1.0.0", "!=0.3.0", "*", "x", ">>1", "1.0.0-alpha", ">=1.0.0-0", "1.2.3+build",
		"~>1.2", "=<1", "1.0.0 ||", "||", "9999999999999999999999.0.0", "1.0.0-" + strings.Repeat("a.", 50) + "a",
	} {
		f.Add(r, "", "", uint8(0))
	}
	f.Add(">=0.2.0", "0.2.0", "", uint8(1))            // Manual, installed
	f.Add("", "0.1.0", "0.3.0", uint8(1))              // Manual, approved
	f.Add("<0.3.0", "0.3.0", "", uint8(1|2))           // Manual, range excludes the installed version, Ignore
	f.Add("1.0.0", "0.2.0", "", uint8(2))              // Ignore: may jump channels
	f.Add("0.x", "0.1.0", "v0.2.0", uint8(1|4))        // channel stable
	f.Add(">=1", "not-a-version", "1.0.0", uint8(1|8)) // channel fast
	f.Add("*", "", "", uint8(4|8))                     // a channel that does not exist
	for _, r := range fuzzRealRanges(f) {
		f.Add(r, "", "", uint8(0))
	}

	idx := testIndex(f)
	channels := []string{"", "stable", "fast", "nonexistent"}
	f.Fuzz(func(t *testing.T, versionRange, installed, approved string, flags uint8) {
		req := Request{
			Name: "op", Package: "a", VersionRange: versionRange, Channel: channels[flags>>2&3],
			Manual: flags&1 != 0, ApprovedVersion: approved,
		}
		if flags&2 != 0 {
			req.ConstraintPolicy = olm.Ignore
		}
		if installed != "" {
			req.Installed = &Installed{BundleName: "a.v" + installed, Version: installed}
		}

		got := Resolve(context.Background(), idx, []Request{req})["op"]
		again := Resolve(context.Background(), idx, []Request{req})["op"]
		if bundleName(got.Bundle) != bundleName(again.Bundle) || got.Message != again.Message || bundleName(got.UpgradeAvailable) != bundleName(again.UpgradeAvailable) {
			t.Fatalf("two resolutions of the same request differ: %s %q then %s %q", bundleName(got.Bundle), got.Message, bundleName(again.Bundle), again.Message)
		}
		if got.Bundle == nil && got.Message == "" {
			t.Fatalf("no bundle and no message")
		}
		if versionRange == "" {
			return
		}
		c, err := mmsemver.NewConstraint(versionRange)
		if err != nil {
			if got.Bundle != nil || !strings.Contains(got.Message, "spec.version") {
				t.Fatalf("spec.version %q does not parse (%v), yet the outcome is %s %q", versionRange, err, bundleName(got.Bundle), got.Message)
			}
			return
		}
		if got.Bundle != nil && !req.Manual {
			v, err := mmsemver.NewVersion(got.Bundle.Version)
			if err != nil {
				t.Fatalf("bundle %s has version %q, which does not parse: %v", got.Bundle.Name, got.Bundle.Version, err)
			}
			if !c.Check(v) {
				t.Fatalf("bundle %s (version %s) is outside spec.version %q", got.Bundle.Name, got.Bundle.Version, versionRange)
			}
		}
	})
}

func bundleName(b *Bundle) string {
	if b == nil {
		return "<none>"
	}
	return b.Name
}

// fuzzRealRanges are the skipRange and versionRange values of a few real bundles and catalogs
// ($OLMV1_TESTDATA, by default ../shared/testdata next to the repository root); none when absent.
func fuzzRealRanges(tb testing.TB) []string {
	root := sharedTestdata()
	re := regexp.MustCompile(`(?:skipRange|versionRange)["']?:\s*["']([^"'\n]+)["']`)
	seen := map[string]bool{}
	var out []string
	for _, rel := range []string{
		"bundles/cert-manager/1.16.5/manifests/cert-manager.clusterserviceversion.yaml",
		"bundles/node-healthcheck-operator/0.8.0/manifests/node-healthcheck-operator.clusterserviceversion.yaml",
		"bundles/rabbitmq-messaging-topology-operator/1.19.3/metadata/annotations.yaml",
		"catalogs/community-v4.20/jumpstarter-operator/catalog.yaml",
		"catalogs/community-v4.20/kubevirt-wol/catalog.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			tb.Logf("fuzz seeds from %s not added: %v", rel, err)
			continue
		}
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			if !seen[m[1]] && len(out) < 20 {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
	}
	return out
}
