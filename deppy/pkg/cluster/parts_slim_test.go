package cluster

import (
	"encoding/json"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// TestSlimKeepsWhatResolutionReads: a part's bundle keeps, of its olm.csv.metadata, the
// suggested namespace and minKubeVersion, so that a bundle the cluster is too old for is skipped in
// part mode as in whole-catalog mode; descriptions and the rest are dropped.
func TestSlimKeepsWhatResolutionReads(t *testing.T) {
	blob := `{"schema":"olm.bundle","name":"foo.v2.0.0","package":"foo","image":"example.test/foo:2",` +
		`"properties":[{"type":"olm.package","value":{"packageName":"foo","version":"2.0.0"}},` +
		`{"type":"olm.csv.metadata","value":{"annotations":{"operatorframework.io/suggested-namespace":"foo-system","alm-examples":"[]"},` +
		`"description":"a long description","minKubeVersion":"1.40.0","displayName":"Foo"}}]}`
	m, err := slim(&declcfg.Meta{Schema: declcfg.SchemaBundle, Package: "foo", Name: "foo.v2.0.0", Blob: json.RawMessage(blob)})
	if err != nil {
		t.Fatal(err)
	}
	var b declcfg.Bundle
	if err := json.Unmarshal(m.Blob, &b); err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	for _, p := range b.Properties {
		if p.Type == property.TypeCSVMetadata {
			if err := json.Unmarshal(p.Value, &md); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]any{"annotations": map[string]any{"operatorframework.io/suggested-namespace": "foo-system"}, "minKubeVersion": "1.40.0"}
	if got, _ := json.Marshal(md); string(got) != mustJSON(t, want) {
		t.Errorf("slimmed olm.csv.metadata = %s, want %s", got, mustJSON(t, want))
	}
	c := &olm.Cluster{KubeVersion: "1.37.2"}
	if why := c.CannotRun(&olm.Bundle{Name: "foo.v2.0.0", Properties: b.Properties}); why == "" {
		t.Errorf("the slimmed bundle needs Kubernetes 1.40.0 and the cluster runs 1.37.2, but CannotRun says it can run")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
