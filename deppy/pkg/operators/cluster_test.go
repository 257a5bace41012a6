package operators

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// clusterFBC offers package k: 1.0.0 (no constraint), 1.5.0 (olm.minKubeVersion 1.30, an
// OpenShift bound of 4.16), 2.0.0 (the CSV's minKubeVersion 1.40.0) and 3.0.0 (a minKubeVersion
// that is not a version), all in one replaces chain.
const clusterFBC = `
schema: olm.package
name: k
defaultChannel: stable
---
schema: olm.channel
package: k
name: stable
entries:
- name: k.v1.0.0
- name: k.v1.5.0
  replaces: k.v1.0.0
- name: k.v2.0.0
  replaces: k.v1.5.0
- name: k.v3.0.0
  replaces: k.v2.0.0
---
schema: olm.bundle
package: k
name: k.v1.0.0
image: registry.test/k:1.0.0
properties:
- {type: olm.package, value: {packageName: k, version: 1.0.0}}
---
schema: olm.bundle
package: k
name: k.v1.5.0
image: registry.test/k:1.5.0
properties:
- {type: olm.package, value: {packageName: k, version: 1.5.0}}
- {type: olm.minKubeVersion, value: "v1.30"}
- {type: olm.maxOpenShiftVersion, value: "4.16"}
---
schema: olm.bundle
package: k
name: k.v2.0.0
image: registry.test/k:2.0.0
properties:
- {type: olm.package, value: {packageName: k, version: 2.0.0}}
- {type: olm.csv.metadata, value: {minKubeVersion: 1.40.0, annotations: {}}}
---
schema: olm.bundle
package: k
name: k.v3.0.0
image: registry.test/k:3.0.0
properties:
- {type: olm.package, value: {packageName: k, version: 3.0.0}}
- {type: olm.csv.metadata, value: {minKubeVersion: "one point forty"}}
`

func clusterIndex(t *testing.T) *olm.Index {
	t.Helper()
	idx, err := olm.NewIndex(loadCatalog(t, "main", 0, clusterFBC))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestClusterVersionSkipsBundles(t *testing.T) {
	idx := clusterIndex(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		cluster       *olm.Cluster
		want          string
		skipped       []string
		notSkipped    []string
		versionRange  string
		wantFailureIn []string
	}{{
		name: "unknown cluster checks nothing", cluster: nil, want: "3.0.0",
	}, {
		name: "pre-release suffix ignored", cluster: &olm.Cluster{KubeVersion: "1.37.2-gke.1"}, want: "1.5.0",
		skipped: []string{
			"bundle k.v3.0.0 skipped: its minKubeVersion \"one point forty\" is not a version, so it cannot be checked against the cluster",
			"bundle k.v2.0.0 skipped: needs Kubernetes >= 1.40.0 (minKubeVersion), the cluster runs 1.37.2",
		},
	}, {
		name: "build suffix and v prefix", cluster: &olm.Cluster{KubeVersion: "v1.37.2+k3s1"}, want: "1.5.0",
	}, {
		name: "minor bound without patch", cluster: &olm.Cluster{KubeVersion: "v1.29.9"}, want: "1.0.0",
		skipped: []string{"bundle k.v1.5.0 skipped: needs Kubernetes >= 1.30 (olm.minKubeVersion), the cluster runs 1.29.9"},
	}, {
		name: "exactly the minimum", cluster: &olm.Cluster{KubeVersion: "1.40.0"}, want: "2.0.0",
	}, {
		name: "OpenShift above the maximum", cluster: &olm.Cluster{KubeVersion: "1.37.0", OpenShiftVersion: "4.17.3"}, want: "1.0.0",
		skipped: []string{"bundle k.v1.5.0 skipped: needs OpenShift <= 4.16 (olm.maxOpenShiftVersion), the cluster runs 4.17.3"},
	}, {
		name: "OpenShift at the maximum's minor", cluster: &olm.Cluster{KubeVersion: "1.37.0", OpenShiftVersion: "4.16.30"}, want: "1.5.0",
	}, {
		name: "no candidate left", cluster: &olm.Cluster{KubeVersion: "1.37.2"}, versionRange: ">=2.0.0",
		wantFailureIn: []string{
			`no bundle of package "k" that Operator "op" may install can run on this cluster`,
			"bundle k.v2.0.0 skipped: needs Kubernetes >= 1.40.0 (minKubeVersion), the cluster runs 1.37.2",
			"Upgrade the cluster, or pin a version this cluster supports with spec.version",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := ResolveWith(ctx, idx, []Request{{Name: "op", Package: "k", VersionRange: tc.versionRange}}, Options{Cluster: tc.cluster})["op"]
			if len(tc.wantFailureIn) > 0 {
				if out.Bundle != nil {
					t.Fatalf("resolved %s, want a failure", out.Bundle.Version)
				}
				for _, s := range tc.wantFailureIn {
					if !strings.Contains(out.Message, s) {
						t.Errorf("message %q does not contain %q", out.Message, s)
					}
				}
				return
			}
			if out.Bundle == nil {
				t.Fatalf("no bundle: %s", out.Message)
			}
			if out.Bundle.Version != tc.want {
				t.Errorf("resolved %s, want %s (skipped %q)", out.Bundle.Version, tc.want, out.Skipped)
			}
			for _, s := range tc.skipped {
				found := false
				for _, got := range out.Skipped {
					found = found || got == s
				}
				if !found {
					t.Errorf("Skipped %q lacks %q", out.Skipped, s)
				}
			}
		})
	}
}

// An installed bundle the cluster can no longer run stays installed: the constraint is about what
// to install, not about what runs.
func TestClusterVersionKeepsInstalledBundle(t *testing.T) {
	idx := clusterIndex(t)
	out := ResolveWith(context.Background(), idx, []Request{{
		Name: "op", Package: "k", VersionRange: "2.0.0", Installed: &Installed{BundleName: "k.v2.0.0", Version: "2.0.0"},
	}}, Options{Cluster: &olm.Cluster{KubeVersion: "1.37.2"}})["op"]
	if out.Bundle == nil || out.Bundle.Version != "2.0.0" {
		t.Fatalf("got %+v, want the installed 2.0.0 kept", out)
	}
	for _, s := range out.Skipped {
		if strings.Contains(s, "k.v2.0.0") {
			t.Errorf("installed bundle reported as skipped: %q", s)
		}
	}
}

// An unreadable cluster version checks nothing rather than failing every Operator.
func TestInvalidClusterVersionChecksNothing(t *testing.T) {
	out := ResolveWith(context.Background(), clusterIndex(t), []Request{{Name: "op", Package: "k"}}, Options{Cluster: &olm.Cluster{KubeVersion: "latest"}})["op"]
	if out.Bundle == nil || out.Bundle.Version != "3.0.0" {
		t.Fatalf("got %+v, want 3.0.0", out)
	}
}

func TestParseClusterVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.37.2": "1.37.2", "v1.37.2": "1.37.2", "1.37.2-gke.1": "1.37.2", "v1.37.2+k3s1": "1.37.2", "v1.30": "1.30", " 4.16 ": "4.16",
	} {
		got, err := olm.ParseClusterVersion(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseClusterVersion(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "latest", "1", "v", "1.x.2", "99999999999999999999.0.0"} {
		if _, err := olm.ParseClusterVersion(in); err == nil {
			t.Errorf("ParseClusterVersion(%q) succeeded, want an error", in)
		}
	}
}

// On community-v4.20, rabbitmq-cluster-operator's newer bundles need Kubernetes >= 1.26.0: on a
// 1.25 cluster resolution picks an older one and names the default channel's head as skipped.
func TestRealCatalogMinKubeVersion(t *testing.T) {
	dir := filepath.Join(communityDir(t), "rabbitmq-cluster-operator")
	ctx := context.Background()
	cat, err := olm.LoadCatalogDir(ctx, "community", 0, dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := olm.NewIndex(cat)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []Request{{Name: "rabbit", Package: "rabbitmq-cluster-operator"}}
	head := Resolve(ctx, idx, reqs)["rabbit"]
	if head.Bundle == nil {
		t.Fatalf("no bundle without a cluster version: %s", head.Message)
	}
	cluster := &olm.Cluster{KubeVersion: "v1.25.4"}
	old := ResolveWith(ctx, idx, reqs, Options{Cluster: cluster})["rabbit"]
	if old.Bundle == nil {
		t.Fatalf("no bundle on Kubernetes 1.25: %s", old.Message)
	}
	if old.Bundle.Version == head.Bundle.Version {
		t.Fatalf("on Kubernetes 1.25 resolution still chose %s", head.Bundle.Name)
	}
	if b := idx.Bundle("community", "rabbitmq-cluster-operator", old.Bundle.Name); b == nil || cluster.CannotRun(b) != "" {
		t.Errorf("chose %s, which the cluster cannot run", old.Bundle.Name)
	}
	want := "bundle " + head.Bundle.Name + " skipped: needs Kubernetes >= 1.26.0 (minKubeVersion), the cluster runs 1.25.4"
	if len(old.Skipped) == 0 || old.Skipped[0] != want {
		t.Errorf("Skipped[0] = %q, want %q", old.Skipped, want)
	}
}
