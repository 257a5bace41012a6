package cluster

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

func serving(name, hash string, lbls map[string]string) Catalog {
	return Catalog{Name: name, Labels: lbls, ContentHash: hash,
		Conditions: []metav1.Condition{{Type: ConditionServing, Status: metav1.ConditionTrue, Reason: "Test"}}}
}

func TestRequests(t *testing.T) {
	created := time.Unix(1700000000, 5)
	cats := []Catalog{
		serving("prod", "h1", map[string]string{"tier": "prod"}),
		serving("prod-2", "h2", map[string]string{"tier": "prod"}),
		serving("dev", "h3", map[string]string{"tier": "dev"}),
		{Name: "prod-unpacking", Labels: map[string]string{"tier": "prod"}, ContentHash: "h4"}, // no Serving condition
		func() Catalog {
			c := serving("prod-nohash", "", map[string]string{"tier": "prod"})
			return c
		}(),
	}
	installedA := BundleDeployment{Name: "a", Annotations: map[string]string{
		AnnotationPackage: "a", AnnotationBundleName: "a.v1.0.0", AnnotationBundleVersion: "1.0.0", AnnotationCatalog: "prod"}}
	tests := []struct {
		name        string
		op          Operator
		bd          *BundleDeployment
		want        *operators.Request // nil: no request
		wantInvalid string
	}{
		{
			name: "defaults",
			op:   Operator{Name: "a", CreationTimestamp: metav1.NewTime(created), Spec: OperatorSpec{PackageName: "a"}},
			want: &operators.Request{Name: "a", Package: "a", ConstraintPolicy: olm.Enforce, Order: created.UnixNano()},
		},
		{
			name: "every field",
			op: Operator{Name: "a", Spec: OperatorSpec{PackageName: "a", Version: ">=1.0.0 <2", Channel: "fast",
				UpgradeConstraintPolicy: "Ignore", UpgradePolicy: "Manual", ApprovedVersion: "1.1.0", DependencyPolicy: "Install", UpgradeScope: "AnyVersion"}},
			want: &operators.Request{Name: "a", Package: "a", VersionRange: ">=1.0.0 <2", Channel: "fast", ConstraintPolicy: olm.Ignore,
				Manual: true, ApprovedVersion: "1.1.0", InstallDependencies: true, AnyVersion: true, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "paused: pinned to the installed bundle whatever the spec asks",
			op: Operator{Name: "a", Spec: OperatorSpec{PackageName: "a", Version: ">=2.0.0", Channels: []string{"fast"}, Paused: true,
				UpgradeConstraintPolicy: "Ignore", UpgradePolicy: "Manual", ApprovedVersion: "2.0.0", UpgradeScope: "AnyVersion"}},
			bd: &installedA,
			want: &operators.Request{Name: "a", Package: "a", VersionRange: "1.0.0", ConstraintPolicy: olm.Enforce,
				Installed: &operators.Installed{BundleName: "a.v1.0.0", Version: "1.0.0"}, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "paused with nothing installed: an ordinary request (the controller installs nothing)",
			op:   Operator{Name: "a", Spec: OperatorSpec{PackageName: "a", Channels: []string{"fast", "stable"}, Paused: true}},
			want: &operators.Request{Name: "a", Package: "a", Channels: []string{"fast", "stable"}, ConstraintPolicy: olm.Enforce, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "explicit defaults of the enums",
			op: Operator{Name: "a", Spec: OperatorSpec{PackageName: "a", UpgradeConstraintPolicy: "Enforce", UpgradePolicy: "Automatic",
				DependencyPolicy: "Require", UpgradeScope: "SemverCompatible"}},
			want: &operators.Request{Name: "a", Package: "a", ConstraintPolicy: olm.Enforce, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "selector picks serving catalogs only, sorted",
			op: Operator{Name: "a", Spec: OperatorSpec{PackageName: "a",
				CatalogSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}},
			want: &operators.Request{Name: "a", Package: "a", ConstraintPolicy: olm.Enforce, Catalogs: []string{"prod", "prod-2"}, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "selector matching nothing gives an empty, non-nil list",
			op: Operator{Name: "a", Spec: OperatorSpec{PackageName: "a",
				CatalogSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "none"}}}},
			want: &operators.Request{Name: "a", Package: "a", ConstraintPolicy: olm.Enforce, Catalogs: []string{}, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "invalid selector",
			op: Operator{Name: "a", Spec: OperatorSpec{PackageName: "a", CatalogSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}},
			wantInvalid: `spec.catalogSelector is invalid: "Near" is not a valid label selector operator`,
		},
		{
			name: "installed bundle of the package",
			op:   Operator{Name: "a", Spec: OperatorSpec{PackageName: "a"}},
			bd:   &installedA,
			want: &operators.Request{Name: "a", Package: "a", ConstraintPolicy: olm.Enforce, Order: metav1.Time{}.UnixNano(),
				Installed: &operators.Installed{BundleName: "a.v1.0.0", Version: "1.0.0"}},
		},
		{
			name: "a BundleDeployment of another package installs nothing for it",
			op:   Operator{Name: "a", Spec: OperatorSpec{PackageName: "renamed"}},
			bd:   &installedA,
			want: &operators.Request{Name: "a", Package: "renamed", ConstraintPolicy: olm.Enforce, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "a BundleDeployment without a version installs nothing",
			op:   Operator{Name: "a", Spec: OperatorSpec{PackageName: "a"}},
			bd:   &BundleDeployment{Name: "a", Annotations: map[string]string{AnnotationPackage: "a", AnnotationBundleName: "a.v1.0.0"}},
			want: &operators.Request{Name: "a", Package: "a", ConstraintPolicy: olm.Enforce, Order: metav1.Time{}.UnixNano()},
		},
		{
			name: "being deleted",
			op:   Operator{Name: "a", Deleting: true, Spec: OperatorSpec{PackageName: "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bds := map[string]BundleDeployment{}
			if tt.bd != nil {
				bds[tt.op.Name] = *tt.bd
			}
			reqs, invalid := Requests([]Operator{tt.op}, bds, cats)
			if tt.wantInvalid != "" {
				if len(reqs) != 0 || !strings.Contains(invalid[tt.op.Name], tt.wantInvalid) {
					t.Fatalf("requests %+v, invalid %q; want no request and %q", reqs, invalid, tt.wantInvalid)
				}
				return
			}
			if len(invalid) != 0 {
				t.Fatalf("invalid %v", invalid)
			}
			if tt.want == nil {
				if len(reqs) != 0 {
					t.Fatalf("want no request, got %+v", reqs)
				}
				return
			}
			if len(reqs) != 1 || !reflect.DeepEqual(reqs[0], *tt.want) {
				t.Fatalf("got  %+v\nwant %+v", reqs, *tt.want)
			}
		})
	}
}

func TestOwnerOperator(t *testing.T) {
	yes := true
	ctrl := func(kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, Name: name, Controller: &yes}
	}
	owned := map[string]string{LabelOwnerKind: "Operator", LabelOwnerName: "a"}
	tests := []struct {
		name   string
		labels map[string]string
		owners []metav1.OwnerReference
		want   string
	}{
		{"created for an Operator", owned, []metav1.OwnerReference{{Kind: "Namespace", Name: "x"}, ctrl("Operator", "a")}, "a"},
		{"no owner label", nil, []metav1.OwnerReference{ctrl("Operator", "a")}, ""},
		{"label names another Operator", map[string]string{LabelOwnerKind: "Operator", LabelOwnerName: "b"}, []metav1.OwnerReference{ctrl("Operator", "a")}, ""},
		{"controlled by something else", owned, []metav1.OwnerReference{ctrl("Deployment", "a")}, ""},
		{"owned but not controlled", owned, []metav1.OwnerReference{{Kind: "Operator", Name: "a"}}, ""},
	}
	for _, tt := range tests {
		if got := OwnerOperator(tt.labels, tt.owners); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func fromYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDecodeObjects decodes objects as the API server serves them (every field the mapping reads,
// and fields it ignores).
func TestDecodeObjects(t *testing.T) {
	op, err := OperatorFromUnstructured(fromYAML(t, `
apiVersion: operators.operatorframework.io/v1alpha1
kind: Operator
metadata:
  name: example
  creationTimestamp: "2026-01-02T03:04:05Z"
  deletionTimestamp: "2026-01-02T04:00:00Z"
  finalizers: [operators.operatorframework.io/pass-deletion-policy]
spec:
  packageName: example-operator
  version: ">=0.1.0"
  channel: stable
  catalogSelector: {matchLabels: {tier: prod}}
  upgradeConstraintPolicy: Ignore
  upgradePolicy: Manual
  approvedVersion: 0.2.0
  dependencyPolicy: Install
  installNamespace: example
  config: {watchNamespaces: [a]}
status:
  resolvedBundle: {name: example-operator.v0.1.0, version: 0.1.0}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Operator{Name: "example", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Deleting: true,
		Spec: OperatorSpec{PackageName: "example-operator", Version: ">=0.1.0", Channel: "stable",
			CatalogSelector:         &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			UpgradeConstraintPolicy: "Ignore", UpgradePolicy: "Manual", ApprovedVersion: "0.2.0", DependencyPolicy: "Install"}}
	if !op.CreationTimestamp.Equal(&want.CreationTimestamp) {
		t.Errorf("creationTimestamp %v", op.CreationTimestamp)
	}
	op.CreationTimestamp = want.CreationTimestamp
	if !reflect.DeepEqual(op, want) {
		t.Errorf("got  %+v\nwant %+v", op, want)
	}

	cat, err := CatalogFromUnstructured(fromYAML(t, `
apiVersion: catalogd.operatorframework.io/v1alpha1
kind: Catalog
metadata: {name: operatorhub, labels: {tier: prod}}
spec:
  priority: -5
  source: {type: Image, image: {ref: quay.io/x:1}}
status:
  contentHash: sha256:abc
  counts: {packages: 1, channels: 2, bundles: 3}
  conditions:
  - {type: Unpacked, status: "True", reason: Unpacked, lastTransitionTime: "2026-01-02T03:04:05Z", message: ""}
  - {type: Serving, status: "True", reason: Serving, lastTransitionTime: "2026-01-02T03:04:05Z", message: ""}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cat.Name != "operatorhub" || cat.Labels["tier"] != "prod" || cat.Priority != -5 || cat.ContentHash != "sha256:abc" ||
		!reflect.DeepEqual(cat.Counts, &Counts{Packages: 1, Channels: 2, Bundles: 3}) || !cat.Serving() {
		t.Errorf("catalog %+v", cat)
	}

	notServing, err := CatalogFromUnstructured(fromYAML(t, `
metadata: {name: new}
status:
  contentHash: sha256:abc
  conditions: [{type: Serving, status: "False", reason: Pending, lastTransitionTime: "2026-01-02T03:04:05Z", message: ""}]
`))
	if err != nil || notServing.Serving() {
		t.Errorf("Serving=False: serving %v, %v", notServing.Serving(), err)
	}

	if _, err := OperatorFromUnstructured(fromYAML(t, `{metadata: {name: broken}, spec: {packageName: [1]}}`)); err == nil || !strings.Contains(err.Error(), `Operator "broken"`) {
		t.Errorf("a malformed Operator: %v", err)
	}
}

// An Operator that installs a bundle directly (spec.source.type Bundle, as read from the API) is no
// request, and Decide says it is not resolved; the others still are.
func TestDirectOperatorsAreNotResolved(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`{metadata: {name: direct}, spec: {source: {type: Bundle, bundle: {source: {type: Image, image: {ref: r.test/b:1}}}}}}`), &u.Object); err != nil {
		t.Fatal(err)
	}
	direct, err := OperatorFromUnstructured(u)
	if err != nil || !direct.Spec.Direct() {
		t.Fatalf("decoding: %+v, %v", direct, err)
	}
	catalog := Operator{Name: "catalog", Spec: OperatorSpec{PackageName: "a", Source: &OperatorSource{Type: "Catalog"}}}
	reqs, invalid := Requests([]Operator{direct, catalog}, nil, nil)
	if len(reqs) != 1 || reqs[0].Name != "catalog" || len(invalid) != 0 {
		t.Errorf("requests %+v, invalid %v", reqs, invalid)
	}
	idx, err := olm.NewIndex()
	if err != nil {
		t.Fatal(err)
	}
	ds := Decide(t.Context(), idx, &State{Operators: []Operator{direct}})
	if len(ds) != 1 || !strings.Contains(ds[0].Outcome.Message, "installs a bundle directly") {
		t.Errorf("decisions %+v", ds)
	}
}
