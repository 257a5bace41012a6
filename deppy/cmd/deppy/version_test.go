package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// versionCatalog offers k 1.0.0 and k 2.0.0, which needs Kubernetes >= 99.0.0.
const versionCatalog = `
schema: olm.package
name: k
defaultChannel: stable
---
schema: olm.channel
package: k
name: stable
entries:
- name: k.v1.0.0
- name: k.v2.0.0
  replaces: k.v1.0.0
---
schema: olm.bundle
package: k
name: k.v1.0.0
image: example.com/k:1.0.0
properties:
- {type: olm.package, value: {packageName: k, version: 1.0.0}}
---
schema: olm.bundle
package: k
name: k.v2.0.0
image: example.com/k:2.0.0
properties:
- {type: olm.package, value: {packageName: k, version: 2.0.0}}
- {type: olm.csv.metadata, value: {minKubeVersion: 99.0.0}}
`

func TestResolveClusterVersion(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "k/catalog.yaml", versionCatalog)
	cat := "k=" + filepath.Join(dir, "k")
	skipped := "bundle k.v2.0.0 skipped: needs Kubernetes >= 99.0.0 (minKubeVersion), the cluster runs 1.37.2"

	code, out, _ := deppy(t, "", "resolve", "--catalog", cat, "--require", "k")
	if code != exitOK || !strings.Contains(out, "k.v2.0.0") {
		t.Fatalf("without --cluster-version: exit %d\n%s", code, out)
	}
	code, out, _ = deppy(t, "", "resolve", "--catalog", cat, "--require", "k", "--cluster-version", "v1.37.2+k3s1")
	if code != exitOK || !strings.Contains(out, "k.v1.0.0") || !strings.Contains(out, "note: "+skipped) {
		t.Fatalf("with --cluster-version: exit %d\n%s", code, out)
	}
	code, out, _ = deppy(t, "", "resolve", "--catalog", cat, "--require", "k@2.0.0", "--cluster-version", "1.37.2-gke.1")
	if code != exitNoSolve || !strings.Contains(out, skipped) {
		t.Fatalf("pinned to 2.0.0: exit %d\n%s", code, out)
	}
	code, _, errOut := deppy(t, "", "resolve", "--catalog", cat, "--require", "k", "--cluster-version", "latest")
	if code == exitOK || !strings.Contains(errOut, `"latest" is not a version`) {
		t.Fatalf("invalid --cluster-version: exit %d\n%s", code, errOut)
	}
}
