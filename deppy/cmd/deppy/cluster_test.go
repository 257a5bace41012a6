package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/deppy/internal/fakeapi"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
)

// clusterFBC: a (1.0.0 → 1.1.0), b 1.0.0 needing the API of package c, c 1.0.0 providing it.
const clusterFBC = `{"schema":"olm.package","name":"a","defaultChannel":"stable"}
{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1.0.0"},{"name":"a.v1.1.0","replaces":"a.v1.0.0"}]}
{"schema":"olm.bundle","package":"a","name":"a.v1.0.0","image":"r/a:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"a","name":"a.v1.1.0","image":"r/a:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.1.0"}}]}
{"schema":"olm.package","name":"b","defaultChannel":"stable"}
{"schema":"olm.channel","package":"b","name":"stable","entries":[{"name":"b.v1.0.0"}]}
{"schema":"olm.bundle","package":"b","name":"b.v1.0.0","image":"r/b:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"b","version":"1.0.0"}},{"type":"olm.gvk.required","value":{"group":"example.com","version":"v1","kind":"Widget"}}]}
{"schema":"olm.package","name":"c","defaultChannel":"stable"}
{"schema":"olm.channel","package":"c","name":"stable","entries":[{"name":"c.v1.0.0"}]}
{"schema":"olm.bundle","package":"c","name":"c.v1.0.0","image":"r/c:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"c","version":"1.0.0"}},{"type":"olm.gvk","value":{"group":"example.com","version":"v1","kind":"Widget"}}]}
`

func fakeCatalog(name, tier string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name, "labels": map[string]any{"tier": tier}},
		"spec":     map[string]any{"priority": int64(0)},
		"status": map[string]any{"contentHash": "sha256:" + strings.Repeat("2", 64), "conditions": []any{map[string]any{
			"type": "Serving", "status": "True", "reason": "Serving", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
	}
}

func fakeOperator(name, created string, spec map[string]any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "creationTimestamp": created}, "spec": spec}
}

func fakeBundleDeployment(op, pkg, version string) map[string]any {
	return map[string]any{"metadata": map[string]any{
		"name":   op,
		"labels": map[string]any{cluster.LabelOwnerKind: "Operator", cluster.LabelOwnerName: op},
		"annotations": map[string]any{cluster.AnnotationPackage: pkg, cluster.AnnotationBundleName: pkg + ".v" + version,
			cluster.AnnotationBundleVersion: version},
		"ownerReferences": []any{map[string]any{"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"name": op, "uid": "u", "controller": true}},
	}}
}

// newFakeCluster serves catalogs main (tier=prod: clusterFBC) and extra (tier=dev: c 1.0.0 again),
// and Operators: op-a (a installed at 1.0.0, Automatic), op-b (b, whose API no Operator provides
// yet) and, unless onlyResolvable, op-m (a package that no catalog has).
func newFakeCluster(t *testing.T, onlyResolvable bool) *fakeapi.Server {
	s := fakeapi.New(t)
	s.Add(cluster.CatalogGVR, "Catalog", fakeCatalog("main", "prod"), fakeCatalog("extra", "dev"))
	s.Add(cluster.CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "main", clusterFBC)...)
	s.Add(cluster.CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "extra",
		strings.Join(strings.Split(clusterFBC, "\n")[7:10], "\n"))...)
	ops := []map[string]any{
		fakeOperator("op-a", "2026-01-01T00:00:01Z", map[string]any{"packageName": "a"}),
		fakeOperator("op-c", "2026-01-01T00:00:03Z", map[string]any{"packageName": "c", "catalogSelector": map[string]any{"matchLabels": map[string]any{"tier": "dev"}}}),
	}
	if !onlyResolvable {
		ops = append(ops,
			fakeOperator("op-b", "2026-01-01T00:00:02Z", map[string]any{"packageName": "b", "upgradePolicy": "Manual"}),
			fakeOperator("op-m", "2026-01-01T00:00:04Z", map[string]any{"packageName": "missing"}))
	}
	s.Add(cluster.OperatorGVR, "Operator", ops...)
	s.Add(cluster.BundleDeploymentGVR, "BundleDeployment", fakeBundleDeployment("op-a", "a", "1.0.0"))
	return s
}

func TestResolveFromCluster(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := newFakeCluster(t, false).Kubeconfig(t, dir)

	code, out, errOut := deppy(t, "", "resolve", "--kubeconfig", kubeconfig)
	if code != exitNoSolve {
		t.Fatalf("exit %d, want %d (an Operator is not resolved)\nstdout:\n%s\nstderr:\n%s", code, exitNoSolve, out, errOut)
	}
	t.Log("\n" + out)
	for _, want := range []string{
		"OPERATOR  PACKAGE  INSTALLED  BUNDLE          VERSION  CATALOG  DEPENDENCIES",
		"op-a      a        1.0.0      a.v1.1.0        1.1.0    main     -",
		"op-b      b        -          b.v1.0.0        1.0.0    main     c@1.0.0 (Operator op-c)",
		"op-c      c        -          c.v1.0.0        1.0.0    extra    -",
		"op-m      missing  -          (not resolved)  -        -        -",
		"Not resolved (the installed bundle, if any, stays installed):\n  op-m: no bundle satisfies every constraint: Operator \"op-m\" requires package \"missing\", but no catalog has package \"missing\"",
		"Serving catalogs: extra, main",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}

	code, out, _ = deppy(t, "", "resolve", "--kubeconfig", kubeconfig, "-o", "json")
	var got clusterOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitNoSolve {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if len(got.Operators) != 4 || strings.Join(got.Catalogs, ",") != "extra,main" {
		t.Fatalf("json: %+v", got)
	}
	a, b, m := got.Operators[0], got.Operators[1], got.Operators[3]
	if !a.Resolved || a.Bundle.Name != "a.v1.1.0" || a.Bundle.Image != "r/a:1.1.0" || a.Installed == nil || a.Installed.Version != "1.0.0" || a.Installed.Bundle != "a.v1.0.0" {
		t.Errorf("op-a: %+v", a)
	}
	if !b.Resolved || len(b.Bundle.Dependencies) != 1 || b.Bundle.Dependencies[0] != (dependencyOutcome{
		Requirement: "olm.gvk.required example.com/v1 Widget", Package: "c", Bundle: "c.v1.0.0", Version: "1.0.0", Operator: "op-c"}) {
		t.Errorf("op-b: %+v", b)
	}
	if m.Resolved || m.Bundle != nil || !strings.Contains(m.Message, `requires package "missing"`) {
		t.Errorf("op-m: %+v", m)
	}

	// --catalog-selector: only main is read; op-c (which selects tier=dev) has no catalog left, so
	// op-b, which needs its API, fails too.
	code, out, _ = deppy(t, "", "resolve", "--kubeconfig", kubeconfig, "--catalog-selector", "tier=prod", "-o", "yaml")
	var sel clusterOutput
	if err := yaml.Unmarshal([]byte(out), &sel); err != nil || code != exitNoSolve {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if strings.Join(sel.Catalogs, ",") != "main" || sel.Operators[2].Resolved || !strings.Contains(sel.Operators[2].Message, "matches no serving Catalog") ||
		sel.Operators[1].Resolved {
		t.Errorf("with --catalog-selector tier=prod:\n%s", out)
	}

	// Every Operator resolved: exit 0.
	kubeconfig = newFakeCluster(t, true).Kubeconfig(t, t.TempDir())
	if code, out, errOut := deppy(t, "", "resolve", "--kubeconfig", kubeconfig); code != exitOK || strings.Contains(out, "Not resolved") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestResolveFromClusterManualUpgrade(t *testing.T) {
	s := fakeapi.New(t)
	s.Add(cluster.CatalogGVR, "Catalog", fakeCatalog("main", "prod"))
	s.Add(cluster.CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "main", clusterFBC)...)
	s.Add(cluster.OperatorGVR, "Operator", fakeOperator("op-a", "2026-01-01T00:00:01Z", map[string]any{"packageName": "a", "upgradePolicy": "Manual"}))
	s.Add(cluster.BundleDeploymentGVR, "BundleDeployment", fakeBundleDeployment("op-a", "a", "1.0.0"))
	code, out, errOut := deppy(t, "", "resolve", "--kubeconfig", s.Kubeconfig(t, t.TempDir()))
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"op-a      a        1.0.0      a.v1.0.0  1.0.0    main",
		"Upgrades awaiting approval (upgradePolicy Manual):\n  op-a: version 1.1.0 (bundle a.v1.1.0 from catalog \"main\"); approve it with: kubectl patch operator op-a --type=merge -p '{\"spec\":{\"approvedVersion\":\"1.1.0\"}}'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout:\n%s\nlacks %q", out, want)
		}
	}
}

// TestResolveFromClusterSemverGuardRails: a next major the catalog offers from the installed bundle
// waits (the semver guard rails of operator-controller), printed as a note and as "waiting" in JSON;
// upgradeScope AnyVersion takes it.
func TestResolveFromClusterSemverGuardRails(t *testing.T) {
	// a's stable channel gains 2.0.0, reachable from 1.0.0 and 1.1.0 (skipRange).
	fbc := strings.Replace(clusterFBC, `{"name":"a.v1.1.0","replaces":"a.v1.0.0"}]}`,
		`{"name":"a.v1.1.0","replaces":"a.v1.0.0"},{"name":"a.v2.0.0","replaces":"a.v1.1.0","skipRange":">=1.0.0 <2.0.0"}]}`, 1) +
		`{"schema":"olm.bundle","package":"a","name":"a.v2.0.0","image":"r/a:2.0.0","properties":[{"type":"olm.package","value":{"packageName":"a","version":"2.0.0"}}]}` + "\n"
	for _, tt := range []struct {
		scope, want string
		waiting     bool
	}{
		{"", "op-a      a        1.0.0      a.v1.1.0  1.1.0    main", true},
		{"AnyVersion", "op-a      a        1.0.0      a.v2.0.0  2.0.0    main", false},
	} {
		s := fakeapi.New(t)
		s.Add(cluster.CatalogGVR, "Catalog", fakeCatalog("main", "prod"))
		s.Add(cluster.CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "main", fbc)...)
		spec := map[string]any{"packageName": "a"}
		if tt.scope != "" {
			spec["upgradeScope"] = tt.scope
		}
		s.Add(cluster.OperatorGVR, "Operator", fakeOperator("op-a", "2026-01-01T00:00:01Z", spec))
		s.Add(cluster.BundleDeploymentGVR, "BundleDeployment", fakeBundleDeployment("op-a", "a", "1.0.0"))
		kubeconfig := s.Kubeconfig(t, t.TempDir())
		code, out, errOut := deppy(t, "", "resolve", "--kubeconfig", kubeconfig)
		if code != exitOK || !strings.Contains(out, tt.want) {
			t.Fatalf("upgradeScope %q: exit %d, stdout lacks %q:\n%s\nstderr:\n%s", tt.scope, code, tt.want, out, errOut)
		}
		const note = "note: Operator op-a: 2.0.0 is available but waits: automatic upgrades stay within major 1"
		if strings.Contains(out, note) != tt.waiting {
			t.Errorf("upgradeScope %q: note %q present: %v, want %v\n%s", tt.scope, note, !tt.waiting, tt.waiting, out)
		}
		_, out, _ = deppy(t, "", "resolve", "--kubeconfig", kubeconfig, "-o", "json")
		var got clusterOutput
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Operators) != 1 {
			t.Fatalf("json: %v\n%s", err, out)
		}
		if w := got.Operators[0].Waiting; (w != nil) != tt.waiting || (w != nil && (w.Version != "2.0.0" || w.Name != "a.v2.0.0")) {
			t.Errorf("upgradeScope %q: waiting %+v", tt.scope, w)
		}
	}
}

func TestResolveFromClusterFlagsAndErrors(t *testing.T) {
	dir := t.TempDir()
	s := newFakeCluster(t, true)
	kubeconfig := s.Kubeconfig(t, dir)
	empty := fakeapi.New(t) // serves nothing: no OLM APIs
	noOLM := empty.Kubeconfig(t, t.TempDir())
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"with --catalog", []string{"--kubeconfig", kubeconfig, "--catalog", dir}, exitBadInput, "--catalog and --kubeconfig do not go together"},
		{"with --require", []string{"--kubeconfig", kubeconfig, "--require", "a"}, exitBadInput, "--require and --kubeconfig do not go together"},
		{"with --installed", []string{"--kubeconfig", kubeconfig, "--installed", "a@1.0.0"}, exitBadInput, "--installed and --kubeconfig"},
		{"with --upgrade-policy", []string{"--kubeconfig", kubeconfig, "--upgrade-policy", "Ignore"}, exitBadInput, "--upgrade-policy and --kubeconfig"},
		{"--context alone", []string{"--catalog", dir, "--require", "a", "--context", "fake"}, exitBadInput, "--context needs --kubeconfig"},
		{"--catalog-selector alone", []string{"--catalog-selector", "tier=prod"}, exitBadInput, "--catalog-selector needs --kubeconfig"},
		{"empty --kubeconfig", []string{"--kubeconfig", ""}, exitBadInput, "--kubeconfig needs a file"},
		{"bad --catalog-selector", []string{"--kubeconfig", kubeconfig, "--catalog-selector", "tier in prod"}, exitBadInput, `--catalog-selector "tier in prod" is not a label selector`},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(dir, "nope")}, exitBadInput, "--kubeconfig " + filepath.Join(dir, "nope")},
		{"unknown context", []string{"--kubeconfig", kubeconfig, "--context", "nope"}, exitBadInput, `context "nope" does not exist`},
		{"unreachable cluster", []string{"--kubeconfig", kubeconfig, "--context", "elsewhere"}, exitBadInput, "http://127.0.0.1:1: listing Operators"},
		{"no OLM APIs", []string{"--kubeconfig", noOLM}, exitBadInput, "is operator-controller's CRD installed?"},
		{"selected context", []string{"--kubeconfig", kubeconfig, "--context", "fake"}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := deppy(t, "", append([]string{"resolve"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s\nwant stderr containing %q", code, tt.wantCode, out, errOut, tt.wantErr)
			}
		})
	}
}

func TestResolveHelpDescribesTheClusterMode(t *testing.T) {
	_, out, _ := deppy(t, "", "resolve", "--help")
	for _, want := range []string{"deppy resolve --kubeconfig FILE [--context NAME] [--catalog-selector SELECTOR]", "-context context", "-catalog-selector selector", "operator-controller's own code"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}
