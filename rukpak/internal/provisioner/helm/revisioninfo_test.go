package helm

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// TestRevisionInfo: the last successful render records the chart's version and a hash of the merged
// user values; the same values from another source give the same hash, other values another one,
// and a failed render leaves the last record as it was.
func TestRevisionInfo(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vals", Namespace: "ns"},
			Data: map[string][]byte{"values.yaml": []byte("cache: {size: 7}\ngreeting: hi\n")}},
	).Build()
	r := New()
	if info := r.RevisionInfo("rel"); info != nil {
		t.Fatalf("before any render: %v", info)
	}
	req := gathered(t, c, request(demo(), &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "vals"}}}))
	if _, err := renderRequest(t, r, req); err != nil {
		t.Fatal(err)
	}
	fromSecret := r.RevisionInfo("rel")
	if fromSecret["chartVersion"] != "1.2.0" {
		t.Fatalf("chartVersion %q, want the demo chart's 1.2.0", fromSecret["chartVersion"])
	}
	if !strings.HasPrefix(fromSecret["valuesHash"], "sha256:") || len(fromSecret["valuesHash"]) != len("sha256:")+64 {
		t.Fatalf("valuesHash %q", fromSecret["valuesHash"])
	}

	// The same values inline, keys in another order: the same hash.
	mustRender(t, r, demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"greeting": "hi", "cache": {"size": 7}}`)})
	if got := r.RevisionInfo("rel")["valuesHash"]; got != fromSecret["valuesHash"] {
		t.Errorf("the same values from another source hash differently: %s vs %s", got, fromSecret["valuesHash"])
	}
	mustRender(t, r, demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"greeting": "hello"}`)})
	other := r.RevisionInfo("rel")["valuesHash"]
	if other == fromSecret["valuesHash"] {
		t.Error("other values, same hash")
	}
	if _, err := render(t, r, demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"replicas": "many"}`)}); err == nil {
		t.Fatal("values breaking the schema rendered")
	}
	if got := r.RevisionInfo("rel")["valuesHash"]; got != other {
		t.Errorf("a failed render changed the recorded values hash: %s", got)
	}
}
