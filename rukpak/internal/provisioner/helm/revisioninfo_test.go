package helm

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// describe renders req with r and returns the Result's RevisionInfo.
func describe(t *testing.T, r *Renderer, req provisioner.Request) (map[string]string, error) {
	t.Helper()
	res, err := r.RenderDescribed(t.Context(), req)
	if err != nil && (res.Objects != nil || res.RevisionInfo != nil) {
		t.Errorf("a failed render returned a Result: %+v", res)
	}
	return res.RevisionInfo, err
}

// TestRevisionInfo: a render's Result records the chart's version and a hash of the merged user
// values; the same values from another source give the same hash, other values another one, and a
// failed render returns none.
func TestRevisionInfo(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vals", Namespace: "ns"},
			Data: map[string][]byte{"values.yaml": []byte("cache: {size: 7}\ngreeting: hi\n")}},
	).Build()
	r := New()
	fromSecret, err := describe(t, r, gathered(t, c, request(demo(), &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "vals"}}})))
	if err != nil {
		t.Fatal(err)
	}
	if fromSecret[InfoChartVersion] != "1.2.0" {
		t.Fatalf("chartVersion %q, want the demo chart's 1.2.0", fromSecret[InfoChartVersion])
	}
	if h := fromSecret[InfoValuesHash]; !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("valuesHash %q", h)
	}

	// The same values inline, keys in another order: the same hash.
	inlineSame, err := describe(t, r, request(demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"greeting": "hi", "cache": {"size": 7}}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if inlineSame[InfoValuesHash] != fromSecret[InfoValuesHash] {
		t.Errorf("the same values from another source hash differently: %s vs %s", inlineSame[InfoValuesHash], fromSecret[InfoValuesHash])
	}
	other, err := describe(t, r, request(demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"greeting": "hello"}`)}))
	if err != nil {
		t.Fatal(err)
	}
	if other[InfoValuesHash] == fromSecret[InfoValuesHash] {
		t.Error("other values, same hash")
	}
	if info, err := describe(t, r, request(demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"replicas": "many"}`)})); err == nil || info != nil {
		t.Fatalf("values breaking the schema: info %v, error %v; want an error and no info", info, err)
	}
}

// TestRevisionInfoPerRender: renders of different BundleDeployments through one Renderer, one after
// another and at once, each get their own RevisionInfo in their Result; the Renderer keeps nothing
// about them (it has no map field to keep it in).
func TestRevisionInfoPerRender(t *testing.T) {
	r := New()
	reqA := request(demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"greeting": "from a"}`)})
	reqA.Name = "a"
	reqB := request(demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, `{"greeting": "from b"}`)})
	reqB.Name = "b"
	wantA, err := describe(t, New(), reqA)
	if err != nil {
		t.Fatal(err)
	}
	wantB, err := describe(t, New(), reqB)
	if err != nil {
		t.Fatal(err)
	}
	if wantA[InfoValuesHash] == wantB[InfoValuesHash] {
		t.Fatal("the two BundleDeployments' values hash the same: the test cannot tell them apart")
	}

	// One after another: b's render does not change what a's Result carries, nor the reverse.
	gotA, err := describe(t, r, reqA)
	if err != nil {
		t.Fatal(err)
	}
	gotB, err := describe(t, r, reqB)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotA, wantA) || !reflect.DeepEqual(gotB, wantB) {
		t.Errorf("sequential renders: a %v (want %v), b %v (want %v)", gotA, wantA, gotB, wantB)
	}

	// At once.
	const rounds = 4
	var wg sync.WaitGroup
	errs := make(chan string, 2*rounds)
	for range rounds {
		for _, c := range []struct {
			req  provisioner.Request
			want map[string]string
		}{{reqA, wantA}, {reqB, wantB}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := r.RenderDescribed(t.Context(), c.req)
				switch {
				case err != nil:
					errs <- c.req.Name + ": " + err.Error()
				case !reflect.DeepEqual(res.RevisionInfo, c.want):
					errs <- c.req.Name + ": RevisionInfo " + res.RevisionInfo[InfoValuesHash] + ", want " + c.want[InfoValuesHash]
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent render of %s", e)
	}

	for i, typ := 0, reflect.TypeOf(Renderer{}); i < typ.NumField(); i++ {
		if f := typ.Field(i); f.Type.Kind() == reflect.Map || f.Type == reflect.TypeOf(sync.Map{}) {
			t.Errorf("Renderer has field %s of type %s: a renderer returns what it knows in its Result and keeps no per-object state", f.Name, f.Type)
		}
	}
}
