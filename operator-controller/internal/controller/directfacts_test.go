package controller

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadBundleFacts(t *testing.T) {
	annotations := &fstest.MapFile{Data: []byte("annotations:\n  operators.operatorframework.io.bundle.package.v1: gadget\n")}
	csv := &fstest.MapFile{Data: []byte(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: gadget.v1.2.0}
spec:
  version: 1.2.0
  customresourcedefinitions:
    required: [{name: wheels.wheels.example.com, version: v1, kind: Wheel}]
`)}
	crd := &fstest.MapFile{Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\n")}
	for _, tc := range []struct {
		name    string
		files   fstest.MapFS
		want    []string
		unsup   string
		wantErr string
	}{
		{name: "no dependencies", files: fstest.MapFS{"metadata/annotations.yaml": annotations, "manifests/csv.yaml": csv, "manifests/crd.yaml": crd},
			want: []string{"olm.gvk.required wheels.example.com/v1 Wheel"}},
		{name: "dependencies.yaml and properties.yaml, deduplicated", files: fstest.MapFS{"metadata/annotations.yaml": annotations, "manifests/csv.yaml": csv,
			"metadata/dependencies.yaml": {Data: []byte(`dependencies:
- {type: olm.package, value: {packageName: sprocket, version: ">=1.0.0 <2.0.0"}}
- {type: olm.gvk, value: {group: cogs.example.com, kind: Cog, version: v1}}
- {type: olm.constraint, value: {failureMessage: x, cel: {rule: "true"}}}
`)},
			"metadata/properties.yaml": {Data: []byte(`properties:
- {type: olm.gvk.required, value: {group: cogs.example.com, kind: Cog, version: v1}}
- {type: olm.package.required, value: {packageName: bolt, versionRange: ">=0.1.0"}}
- {type: olm.maxOpenShiftVersion, value: "4.99"}
`)}},
			want: []string{"olm.package.required bolt >=0.1.0", "olm.package.required sprocket >=1.0.0 <2.0.0", "olm.gvk.required cogs.example.com/v1 Cog",
				"olm.gvk.required wheels.example.com/v1 Wheel"}, unsup: "olm.constraint"},
		{name: "no CSV", files: fstest.MapFS{"metadata/annotations.yaml": annotations, "manifests/crd.yaml": crd}, wantErr: "manifests/ holds no ClusterServiceVersion"},
		{name: "not registry+v1", files: fstest.MapFS{"Chart.yaml": {Data: []byte("name: x")}}, wantErr: "reading metadata/annotations.yaml"},
		{name: "bad dependency", files: fstest.MapFS{"metadata/annotations.yaml": annotations, "manifests/csv.yaml": csv,
			"metadata/dependencies.yaml": {Data: []byte("dependencies: [{type: olm.gvk, value: {group: g}}]")}}, wantErr: "want {group, version, kind}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ReadBundleFacts(tc.files)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Package != "gadget" || f.Version != "1.2.0" || f.CSVName != "gadget.v1.2.0" {
				t.Errorf("facts %+v", f)
			}
			var got []string
			for _, r := range f.Requires {
				got = append(got, r.Type+" "+r.Value())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("requires:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if strings.Join(f.Unsupported, ",") != tc.unsup {
				t.Errorf("unsupported %v", f.Unsupported)
			}
		})
	}
}
