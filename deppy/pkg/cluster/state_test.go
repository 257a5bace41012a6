package cluster

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/olmv1/olmv1/deppy/internal/fakeapi"
)

// mainFBC: a (stable: 1.0.0 → 1.1.0; fast: 2.0.0), m (1.0.0 → 1.1.0), b 1.0.0 requiring package
// c, and c 1.0.0.
const mainFBC = `{"schema":"olm.package","name":"a","defaultChannel":"stable"}
{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1.0.0"},{"name":"a.v1.1.0","replaces":"a.v1.0.0"}]}
{"schema":"olm.channel","package":"a","name":"fast","entries":[{"name":"a.v2.0.0"}]}
{"schema":"olm.bundle","package":"a","name":"a.v1.0.0","image":"r/a:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"a","name":"a.v1.1.0","image":"r/a:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.1.0"}}]}
{"schema":"olm.bundle","package":"a","name":"a.v2.0.0","image":"r/a:2.0.0","properties":[{"type":"olm.package","value":{"packageName":"a","version":"2.0.0"}}]}
{"schema":"olm.package","name":"m","defaultChannel":"stable"}
{"schema":"olm.channel","package":"m","name":"stable","entries":[{"name":"m.v1.0.0"},{"name":"m.v1.1.0","replaces":"m.v1.0.0"}]}
{"schema":"olm.bundle","package":"m","name":"m.v1.0.0","image":"r/m:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"m","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"m","name":"m.v1.1.0","image":"r/m:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"m","version":"1.1.0"}}]}
{"schema":"olm.package","name":"b","defaultChannel":"stable"}
{"schema":"olm.channel","package":"b","name":"stable","entries":[{"name":"b.v1.0.0"}]}
{"schema":"olm.bundle","package":"b","name":"b.v1.0.0","image":"r/b:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"b","version":"1.0.0"}},{"type":"olm.package.required","value":{"packageName":"c","versionRange":">=1.0.0"}}]}
{"schema":"olm.package","name":"c","defaultChannel":"stable"}
{"schema":"olm.channel","package":"c","name":"stable","entries":[{"name":"c.v1.0.0"}]}
{"schema":"olm.bundle","package":"c","name":"c.v1.0.0","image":"r/c:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"c","version":"1.0.0"}}]}
`

func servingCatalog(name string, labels map[string]any, priority int, packages, channels, bundles int) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec":     map[string]any{"priority": int64(priority), "source": map[string]any{"type": "Image", "image": map[string]any{"ref": "registry.invalid/" + name}}},
		"status": map[string]any{
			"contentHash": "sha256:" + strings.Repeat("1", 64),
			"counts":      map[string]any{"packages": int64(packages), "channels": int64(channels), "bundles": int64(bundles)},
			"conditions": []any{map[string]any{"type": "Serving", "status": "True", "reason": "Serving", "message": "",
				"lastTransitionTime": "2026-01-01T00:00:00Z"}},
		},
	}
}

func operatorObject(name, created string, spec map[string]any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name, "creationTimestamp": created}, "spec": spec}
}

// bundleDeploymentObject is a BundleDeployment as operator-controller creates it for Operator op.
func bundleDeploymentObject(op, pkg, bundle, version string, controlled bool) map[string]any {
	return map[string]any{
		"metadata": map[string]any{
			"name":   op,
			"labels": map[string]any{LabelOwnerKind: "Operator", LabelOwnerName: op},
			"annotations": map[string]any{AnnotationPackage: pkg, AnnotationBundleName: bundle, AnnotationBundleVersion: version,
				AnnotationCatalog: "main"},
			"ownerReferences": []any{map[string]any{"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
				"name": op, "uid": "u-" + op, "controller": controlled}},
		},
		"spec": map[string]any{"provisionerClassName": "core-rukpak-io-registry"},
	}
}

// newFakeCluster serves the Catalogs main (tier=prod), dev (tier=dev) and off (not serving), their
// content, and Operators covering every kind of outcome.
func newFakeCluster(t *testing.T) *fakeapi.Server {
	s := fakeapi.New(t)
	off := servingCatalog("off", nil, 0, 1, 1, 1)
	off["status"].(map[string]any)["conditions"] = []any{}
	s.Add(CatalogGVR, "Catalog",
		servingCatalog("main", map[string]any{"tier": "prod"}, 0, 4, 5, 7),
		servingCatalog("dev", map[string]any{"tier": "dev"}, 0, 1, 1, 1),
		off)
	s.Add(CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "main", mainFBC)...)
	s.Add(CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "dev", pkgFBC("d", "1.0.0"))...)
	s.Add(CatalogMetadataGVR, "CatalogMetadata", fakeapi.CatalogMetadata(t, "off", pkgFBC("z", "1.0.0"))...)
	deleting := operatorObject("op-deleting", "2026-01-01T00:00:09Z", map[string]any{"packageName": "c"})
	deleting["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-02T00:00:00Z"
	s.Add(OperatorGVR, "Operator",
		operatorObject("op-a", "2026-01-01T00:00:01Z", map[string]any{"packageName": "a"}),
		operatorObject("op-m", "2026-01-01T00:00:02Z", map[string]any{"packageName": "m", "upgradePolicy": "Manual"}),
		operatorObject("op-b", "2026-01-01T00:00:03Z", map[string]any{"packageName": "b"}),
		operatorObject("op-e-staging", "2026-01-01T00:00:04Z", map[string]any{"packageName": "e",
			"catalogSelector": map[string]any{"matchLabels": map[string]any{"tier": "staging"}}}),
		operatorObject("op-d-dev", "2026-01-01T00:00:05Z", map[string]any{"packageName": "d",
			"catalogSelector": map[string]any{"matchLabels": map[string]any{"tier": "dev"}}}),
		operatorObject("op-bad-selector", "2026-01-01T00:00:06Z", map[string]any{"packageName": "x",
			"catalogSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "tier", "operator": "Near"}}}}),
		operatorObject("op-a-again", "2026-01-01T00:00:07Z", map[string]any{"packageName": "a"}),
		operatorObject("op-z", "2026-01-01T00:00:08Z", map[string]any{"packageName": "z"}),
		deleting)
	s.Add(BundleDeploymentGVR, "BundleDeployment",
		bundleDeploymentObject("op-m", "m", "m.v1.0.0", "1.0.0", true),
		// Not controlled by its Operator: not an Operator's BundleDeployment.
		bundleDeploymentObject("op-a", "a", "a.v1.0.0", "1.0.0", false))
	return s
}

func dynamicClient(t *testing.T, s *fakeapi.Server) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// TestReadStateAndDecide reads a cluster (a fake API server) and resolves it as operator-controller
// does: every kind of outcome, and what was read of the catalogs.
func TestReadStateAndDecide(t *testing.T) {
	ctx := context.Background()
	s := newFakeCluster(t)
	dc := dynamicClient(t, s)
	st, err := ReadState(ctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Operators) != 9 || len(st.Catalogs) != 3 || len(st.BundleDeployments) != 1 {
		t.Fatalf("read %d Operators, %d Catalogs, BundleDeployments %v", len(st.Operators), len(st.Catalogs), st.BundleDeployments)
	}
	cache := &Cache{Reader: &DynamicReader{Client: dc, PageSize: 4}}
	idx, names, err := cache.Index(ctx, st.Catalogs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "dev,main" {
		t.Errorf("serving catalogs %v", names)
	}
	var pages []string
	for _, r := range s.Requests() {
		if strings.Contains(r, "catalogmetadata") {
			pages = append(pages, r)
		}
	}
	// dev: 3 blobs in one page; main: 16 blobs in 4 pages; off is not read.
	if len(pages) != 5 || !strings.Contains(pages[1], "fieldSelector=spec.catalog%3Dmain") || !strings.Contains(pages[2], "continue=4") {
		t.Errorf("CatalogMetadata requests %v", pages)
	}

	decisions := Decide(ctx, idx, st)
	byName := map[string]Decision{}
	var order []string
	for _, d := range decisions {
		t.Logf("%s: bundle %+v, message %q", d.Operator, d.Outcome.Bundle, d.Outcome.Message)
		byName[d.Operator] = d
		order = append(order, d.Operator)
	}
	if strings.Join(order, ",") != "op-a,op-a-again,op-b,op-bad-selector,op-d-dev,op-deleting,op-e-staging,op-m,op-z" {
		t.Errorf("order %v", order)
	}
	bundle := func(name string) string {
		d := byName[name]
		if d.Outcome.Bundle == nil {
			return "none: " + d.Outcome.Message
		}
		return d.Outcome.Bundle.Name + " from " + d.Outcome.Bundle.Catalog
	}
	for op, want := range map[string]string{
		"op-a":     "a.v1.1.0 from main", // default channel's head, not 2.0.0 from fast
		"op-m":     "m.v1.0.0 from main", // Manual: stays on the installed version
		"op-d-dev": "d.v1.0.0 from dev",
	} {
		if got := bundle(op); got != want {
			t.Errorf("%s: %s, want %s", op, got, want)
		}
	}
	if d := byName["op-a"]; d.Installed != nil {
		t.Errorf("op-a: a BundleDeployment its Operator does not control installs nothing: %+v", d.Installed)
	}
	if d := byName["op-m"]; d.Installed == nil || d.Installed.Version != "1.0.0" || d.Outcome.UpgradeAvailable == nil || d.Outcome.UpgradeAvailable.Version != "1.1.0" {
		t.Errorf("op-m: installed %+v, upgrade available %+v", d.Installed, d.Outcome.UpgradeAvailable)
	}
	for op, want := range map[string]string{
		"op-b":            `package "c" (in catalog "main") is not installed by any Operator`,
		"op-e-staging":    "spec.catalogSelector matches no serving Catalog",
		"op-bad-selector": `spec.catalogSelector is invalid: "Near" is not a valid label selector operator`,
		"op-a-again":      `package "a" is already requested by Operator "op-a"`,
		"op-z":            `"z"`,
		"op-deleting":     "being deleted",
	} {
		if got := bundle(op); !strings.HasPrefix(got, "none: ") || !strings.Contains(got, want) {
			t.Errorf("%s: %s\nwant a failure containing %s", op, got, want)
		}
	}
	if !byName["op-deleting"].Deleting {
		t.Error("op-deleting is not marked as being deleted")
	}

	// --catalog-selector: only the selected catalogs count, as if the others were not serving.
	st.Catalogs = SelectedCatalogs(st.Catalogs, labels.SelectorFromSet(labels.Set{"tier": "prod"}))
	idx, names, err = (&Cache{Reader: &DynamicReader{Client: dc}}).Index(ctx, st.Catalogs)
	if err != nil || strings.Join(names, ",") != "main" {
		t.Fatalf("selected catalogs %v, %v", names, err)
	}
	for _, d := range Decide(ctx, idx, st) {
		if d.Operator == "op-d-dev" && (d.Outcome.Bundle != nil || !strings.Contains(d.Outcome.Message, "matches no serving Catalog")) {
			t.Errorf("op-d-dev without the dev catalog: %+v", d.Outcome)
		}
	}
}

func TestReadStateSaysWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	s := fakeapi.New(t)
	if _, err := ReadState(ctx, dynamicClient(t, s)); err == nil || !strings.Contains(err.Error(), "listing Operators (operators.operators.operatorframework.io; is operator-controller's CRD installed?)") {
		t.Errorf("no Operator API: %v", err)
	}
	s.Add(OperatorGVR, "Operator")
	if _, err := ReadState(ctx, dynamicClient(t, s)); err == nil || !strings.Contains(err.Error(), "is catalogd's CRD installed?") {
		t.Errorf("no Catalog API: %v", err)
	}
	_, err := (&DynamicReader{Client: dynamicClient(t, s)}).ReadCatalog(ctx, "main")
	if err == nil || !strings.Contains(err.Error(), `catalog "main": listing CatalogMetadata`) || !strings.Contains(err.Error(), "apiservices") {
		t.Errorf("no CatalogMetadata API: %v", err)
	}
}
