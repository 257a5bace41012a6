package catalogs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestSlimBlob(t *testing.T) {
	csv := b64(`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"a.v1.0.0"}}`)
	crd := b64(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"as.example.com"}}`)
	props := `[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},` +
		`{"type":"olm.bundle.object","value":{"data":"` + csv + `"}},` +
		`{"type":"olm.gvk","value":{"group":"example.com","kind":"A","version":"v1"}},` +
		`{"type":"olm.bundle.object","value":{"data":"` + crd + `"}},` +
		`{"type":"olm.csv.metadata","value":{"annotations":{"x":"<b>"}}}]`
	for _, tc := range []struct {
		name, schema, blob string
		want               string // "" means the blob itself
	}{
		{name: "bundle with an image: objects emptied, the rest as served", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"example.com/a:1","properties":` + props + `,"relatedImages":[{"name":"x","image":"example.com/x"}]}`,
			want: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"example.com/a:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},` +
				`{"type":"olm.bundle.object","value":{}},{"type":"olm.gvk","value":{"group":"example.com","kind":"A","version":"v1"}},{"type":"olm.bundle.object","value":{}},` +
				`{"type":"olm.csv.metadata","value":{"annotations":{"x":"<b>"}}}],"relatedImages":[{"name":"x","image":"example.com/x"}]}`},
		{name: "spaces and a copy of an object in an ignored field: the property's own is slimmed", schema: "olm.bundle",
			blob: "{ \"x\" : [ {\"type\":\"olm.bundle.object\",\"value\":{\"data\":\"" + crd + "\"}} ],\n \"image\" : \"i\",\n \"properties\" : [\n  {\"type\":\"olm.bundle.object\",\"value\":{\"data\":\"" + crd + "\"}} ,\n  {\"type\":\"olm.bundle.object\",\"value\":{\"data\":\"" + crd + "\"}}\n ]\n}",
			want: "{ \"x\" : [ {\"type\":\"olm.bundle.object\",\"value\":{}} ],\n \"image\" : \"i\",\n \"properties\" : [\n  {\"type\":\"olm.bundle.object\",\"value\":{}} ,\n  {\"type\":\"olm.bundle.object\",\"value\":{\"data\":\"" + crd + "\"}}\n ]\n}"},
		{name: "a value with spaces", schema: "olm.bundle",
			blob: `{"image":"i","properties":[{"type":"olm.bundle.object","value":{ "data" : "` + crd + `" }}]}`,
			want: `{"image":"i","properties":[{"type":"olm.bundle.object","value":{}}]}`},
		{name: "bundle without an image keeps its objects", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","properties":` + props + `}`},
		{name: "empty image", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"","properties":` + props + `}`},
		{name: "no bundle object", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"i","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}],"x":"olm.bundle.object"}`},
		{name: "not a bundle", schema: "olm.package",
			blob: `{"schema":"olm.package","name":"a","description":"olm.bundle.object"}`},
		{name: "data not base64: the error stays", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"i","properties":[{"type":"olm.bundle.object","value":{"data":"!!"}}]}`},
		{name: "data not JSON: kept for declcfg to convert", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"i","properties":[{"type":"olm.bundle.object","value":{"data":"` + b64("kind: CustomResourceDefinition\n") + `"}}]}`},
		{name: "properties not a list", schema: "olm.bundle",
			blob: `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"i","properties":{"type":"olm.bundle.object"}}`},
		{name: "not JSON", schema: "olm.bundle", blob: `{"image":"i","properties":[olm.bundle.object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.blob)
			got := slimBlob(tc.schema, in)
			if tc.want == "" {
				if &got[0] != &in[0] || len(got) != len(in) {
					t.Fatalf("blob changed: %s", got)
				}
				return
			}
			if string(got) != tc.want {
				t.Fatalf("slimmed:\n got %s\nwant %s", got, tc.want)
			}
			full, err := declcfg.LoadSlice([]*declcfg.Meta{{Schema: tc.schema, Name: "a.v1.0.0", Package: "a", Blob: in}})
			if err != nil {
				t.Fatal(err)
			}
			slim, err := declcfg.LoadSlice([]*declcfg.Meta{{Schema: tc.schema, Name: "a.v1.0.0", Package: "a", Blob: got}})
			if err != nil {
				t.Fatal(err)
			}
			sameButObjects(t, full.Bundles[0], slim.Bundles[0])
		})
	}
}

// sameButObjects fails unless a and b, the same bundle as served and slimmed, differ only in their
// olm.bundle.object values (each {} or as served) and what declcfg derives from them (Objects,
// CsvJSON).
func sameButObjects(t *testing.T, a, b declcfg.Bundle) {
	t.Helper()
	if len(a.Properties) != len(b.Properties) {
		t.Fatalf("bundle %s: %d properties slimmed, %d served", a.Name, len(b.Properties), len(a.Properties))
	}
	for i := range a.Properties {
		pa, pb := a.Properties[i], b.Properties[i]
		if pa.Type != pb.Type {
			t.Fatalf("bundle %s: property %d: type %q slimmed, %q served", a.Name, i, pb.Type, pa.Type)
		}
		if pa.Type == property.TypeBundleObject {
			if string(pb.Value) != "{}" && !bytes.Equal(pa.Value, pb.Value) {
				t.Fatalf("bundle %s: property %d: %s", a.Name, i, pb.Value)
			}
			continue
		}
		if !bytes.Equal(pa.Value, pb.Value) {
			t.Fatalf("bundle %s: property %d (%s) changed:\n%s\n%s", a.Name, i, pa.Type, pa.Value, pb.Value)
		}
	}
	if !reflect.DeepEqual(operators.RecordedProperties(a.Properties), operators.RecordedProperties(b.Properties)) {
		t.Fatalf("bundle %s: recorded properties differ", a.Name)
	}
	a.Properties, b.Properties = nil, nil
	a.Objects, b.Objects, a.CsvJSON, b.CsvJSON = nil, nil, "", ""
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("bundle differs besides its objects:\n%+v\n%+v", a, b)
	}
}

// TestSlimmedPackagesResolveTheSame slims real packages of community-v4.16 (OLMV1_TESTDATA, default
// ../shared/testdata), whose bundles carry olm.bundle.object manifests, and checks that every bundle
// keeps everything but its objects and that resolution chooses the same, with the same messages, for
// every version of each package and for the package alone.
func TestSlimmedPackagesResolveTheSame(t *testing.T) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	for _, pkg := range []string{"trident-operator", "apicurio-registry-3", "coherence-operator", "multicluster-global-hub-operator", "kube-green"} {
		t.Run(pkg, func(t *testing.T) {
			dir := filepath.Join(root, "catalogs", "community-v4.16", pkg)
			if _, err := os.Stat(dir); err != nil {
				t.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
			}
			var served, slimmed []*declcfg.Meta
			size, slimSize := 0, 0
			if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, m *declcfg.Meta, err error) error {
				if err != nil {
					return err
				}
				served = append(served, m)
				s := *m
				s.Blob = slimBlob(m.Schema, m.Blob)
				slimmed = append(slimmed, &s)
				size, slimSize = size+len(m.Blob), slimSize+len(s.Blob)
				return nil
			}, declcfg.WithConcurrency(1)); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d blobs, %d bytes served, %d slimmed", len(served), size, slimSize)
			full, err := parseBlobs("c", served)
			if err != nil {
				t.Fatal(err)
			}
			slim, err := parseBlobs("c", slimmed)
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Bundles) != len(slim.Bundles) || len(full.Bundles) == 0 {
				t.Fatalf("%d bundles slimmed, %d served", len(slim.Bundles), len(full.Bundles))
			}
			for i := range full.Bundles {
				sameButObjects(t, full.Bundles[i], slim.Bundles[i])
				for _, p := range slim.Bundles[i].Properties {
					if p.Type == property.TypeBundleObject && string(p.Value) != "{}" {
						t.Fatalf("bundle %s: an object kept", slim.Bundles[i].Name)
					}
				}
			}
			if !reflect.DeepEqual(full.Packages, slim.Packages) || !reflect.DeepEqual(full.Channels, slim.Channels) || !reflect.DeepEqual(full.Deprecations, slim.Deprecations) {
				t.Fatal("packages, channels or deprecations differ")
			}
			resolve := func(cfg *declcfg.DeclarativeConfig) map[string]operators.Outcome {
				c, err := olm.NewCatalog("c", 0, cfg)
				if err != nil {
					t.Fatal(err)
				}
				idx, err := olm.NewIndex(c)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]operators.Outcome{}
				reqs := []operators.Request{{Name: "any", Package: pkg, InstallDependencies: true}}
				for _, b := range cfg.Bundles {
					var v property.Package
					for _, p := range b.Properties {
						if p.Type == property.TypePackage && json.Unmarshal(p.Value, &v) == nil {
							reqs = append(reqs, operators.Request{Name: b.Name, Package: pkg, VersionRange: v.Version, InstallDependencies: true})
						}
					}
				}
				for _, r := range reqs {
					for name, o := range operators.Resolve(context.Background(), idx, []operators.Request{r}) {
						out[r.Name+"/"+name] = o
					}
				}
				return out
			}
			want, got := resolve(full), resolve(slim)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("resolution differs:\nserved  %+v\nslimmed %+v", want, got)
			}
			if pkg != "kube-green" && slimSize >= size {
				t.Fatalf("nothing slimmed: %d bytes", slimSize)
			}
		})
	}
}

// TestReadPartSlimsReadBlobsDoesNot: parts come slimmed; a whole catalog comes as served, since its
// content hash is computed from the blobs.
func TestReadPartSlimsReadBlobsDoesNot(t *testing.T) {
	bundle := `{"schema":"olm.bundle","name":"a.v1.0.0","package":"a","image":"example.com/a:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":"` + b64(`{"kind":"ClusterServiceVersion"}`) + `"}}]}`
	api := &fakeMetadataAPI{blobs: blobsOf(t, "one", `{"schema":"olm.package","name":"a"}`+"\n"+bundle)}
	r := &MetadataReader{Client: api}
	var part []string
	if err := r.ReadPart(context.Background(), "one", nil, 0, func(b cluster.ServedBlob) error {
		part = append(part, string(b.Meta.Blob))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := string(slimBlob("olm.bundle", []byte(bundle))); len(part) != 2 || part[1] != want || want == bundle {
		t.Fatalf("part: %q, want the bundle slimmed", part)
	}
	metas, err := r.ReadBlobs(context.Background(), "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(metas) != 2 || string(metas[1].Blob) != bundle {
		t.Fatalf("whole catalog: %d blobs, bundle %s", len(metas), metas[len(metas)-1].Blob)
	}
}

// TestValidBundleObject: the pooled fast path accepts what encoding/json's decoding of a
// property.BundleObject and json.Valid accept, and nothing else.
func TestValidBundleObject(t *testing.T) {
	obj := b64(`{"kind":"ConfigMap","data":{"a":"b/c?"}}`)
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{`{"data":"` + obj + `"}`, true},
		{`{"data":"` + strings.ReplaceAll(obj, "/", `\/`) + `"}`, true}, // escaped: the slow path
		{`{ "data": "` + obj + `" }`, true},
		{`{"data":"` + obj[:len(obj)-4] + `"}`, false}, // truncated JSON
		{`{"data":"` + obj[:len(obj)-1] + `"}`, false}, // not base64
		{`{"data":"` + b64("kind: x") + `"}`, false},   // YAML
		{`{"data":""}`, false},
		{`{"data":"` + obj + `","x":"y"}`, true},
		{`{"data":"` + obj + `"`, false},
		{`{"data":1}`, false},
	} {
		var ref property.BundleObject
		wantRef := json.Unmarshal([]byte(tc.value), &ref) == nil && json.Valid(ref.Data)
		if got := validBundleObject(json.RawMessage(tc.value)); got != tc.want || got != wantRef {
			t.Errorf("%s: got %v, want %v (encoding/json: %v)", tc.value, got, tc.want, wantRef)
		}
	}
}
