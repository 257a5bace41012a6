package provisioner

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// needing is a Renderer that needs what needs says.
type needing struct {
	plainRenderer
	needs Needs
}

func (n needing) Needs() Needs { return n.needs }

var (
	tenant = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Tenant"}
	local  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Local"}
)

func fixedCaps(context.Context) (*Capabilities, error) {
	return &Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"apps/v1", "apps/v1/Deployment"}}, nil
}

// countingClient serves objs and counts the reads; fail, when set, fails every read.
func countingClient(reads *int, fail error, objs ...client.Object) client.Reader {
	return interceptor.NewClient(fake.NewClientBuilder().WithObjects(objs...).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			*reads++
			if fail != nil {
				return fail
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// Gather reads, for each valuesFrom reference in order, whether its object exists and what its key
// holds; the capabilities; and the scope of the kinds the renderer lists that the cluster serves.
func TestGather(t *testing.T) {
	var reads int
	values := countingClient(&reads, nil,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: "ns"}, Data: map[string][]byte{"values.yaml": []byte("a: 1")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: "ns"},
			Data: map[string]string{"prod.yaml": "b: 2"}, BinaryData: map[string][]byte{"bin.yaml": []byte("c: 3")}},
	)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(tenant, meta.RESTScopeRoot)
	mapper.Add(local, meta.RESTScopeNamespace)
	g := &Gatherer{Values: values, Capabilities: fixedCaps, Mapper: mapper}
	r := needing{needs: Needs{ValuesFrom: true, Capabilities: true, Kinds: func(Request) []schema.GroupVersionKind {
		return []schema.GroupVersionKind{tenant, local, {Group: "unserved.io", Version: "v1", Kind: "Thing"}, tenant}
	}}}
	req := Request{Name: "bd", InstallNamespace: "ns", Config: &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{
		{Kind: "Secret", Name: "base"},
		{Kind: "ConfigMap", Name: "env", Key: "prod.yaml"},
		{Kind: "ConfigMap", Name: "env", Key: "bin.yaml"},
		{Kind: "ConfigMap", Name: "env"},
		{Kind: "Secret", Name: "absent", Optional: true},
		{Kind: "Endpoints", Name: "env"},
	}}}
	got, err := g.Gather(t.Context(), r, req)
	if err != nil {
		t.Fatal(err)
	}
	wantDocs := []ValuesDocument{
		{Exists: true, Found: true, Data: []byte("a: 1")},
		{Exists: true, Found: true, Data: []byte("b: 2")},
		{Exists: true, Found: true, Data: []byte("c: 3")},
		{Exists: true},
		{},
		{}, // not a kind valuesFrom reads: the renderer refuses it
	}
	if !reflect.DeepEqual(got.ValuesFrom, wantDocs) {
		t.Errorf("ValuesFrom = %+v, want %+v", got.ValuesFrom, wantDocs)
	}
	if reads != 5 {
		t.Errorf("%d reads, want one per Secret or ConfigMap reference (5)", reads)
	}
	if got.Capabilities == nil || got.Capabilities.KubeVersion != "v1.37.2" {
		t.Errorf("Capabilities = %+v", got.Capabilities)
	}
	wantScopes := map[schema.GroupKind]bool{tenant.GroupKind(): false, local.GroupKind(): true}
	if !reflect.DeepEqual(got.Scopes, wantScopes) {
		t.Errorf("Scopes = %v, want %v (a kind the cluster does not serve is left out)", got.Scopes, wantScopes)
	}
	if got.Name != "bd" || got.Config != req.Config {
		t.Errorf("Gather changed the request's own fields: %+v", got)
	}
}

// Gather reads only what the renderer needs and what it has a source for.
func TestGatherOnlyWhatIsNeeded(t *testing.T) {
	var reads int
	kindsCalled := false
	values := countingClient(&reads, nil)
	cfg := &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "v"}}}
	req := Request{InstallNamespace: "ns", Config: cfg}
	kinds := func(Request) []schema.GroupVersionKind { kindsCalled = true; return []schema.GroupVersionKind{tenant} }
	for name, tc := range map[string]struct {
		g *Gatherer
		r Renderer
	}{
		"no Gatherer":                   {nil, needing{needs: Needs{ValuesFrom: true, Capabilities: true}}},
		"a Renderer that is no Needer":  {&Gatherer{Values: values, Capabilities: fixedCaps}, plainRenderer{}},
		"a Renderer that needs nothing": {&Gatherer{Values: values, Capabilities: fixedCaps}, needing{}},
		"kinds without a Mapper":        {&Gatherer{Values: values}, needing{needs: Needs{Kinds: kinds}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.g.Gather(t.Context(), tc.r, req)
			if err != nil || !reflect.DeepEqual(got, req) {
				t.Errorf("Gather = %+v, %v; want the request as it was", got, err)
			}
		})
	}
	if reads != 0 || kindsCalled {
		t.Errorf("%d reads, kinds listed: %v; want nothing read", reads, kindsCalled)
	}
	// valuesFrom without a values reader: nothing gathered, which the renderer reports.
	got, err := (&Gatherer{Capabilities: fixedCaps}).Gather(t.Context(), needing{needs: Needs{ValuesFrom: true}}, req)
	if err != nil || got.ValuesFrom != nil {
		t.Errorf("without a values reader: %+v, %v", got.ValuesFrom, err)
	}
}

// A read that fails (not a missing object) fails Gather with the message a render gave before:
// which reference, which object, and the API server's error.
func TestGatherErrors(t *testing.T) {
	var reads int
	down := errors.New("etcdserver: request timed out")
	cfg := &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "v"}}}
	_, err := (&Gatherer{Values: countingClient(&reads, down)}).Gather(t.Context(), needing{needs: Needs{ValuesFrom: true}},
		Request{InstallNamespace: "ns", Config: cfg})
	if want := `spec.config.valuesFrom[0]: reading Secret ns/v key "values.yaml": etcdserver: request timed out`; err == nil || err.Error() != want || !errors.Is(err, down) {
		t.Errorf("values read failure: %v, want %q", err, want)
	}
	failing := func(context.Context) (*Capabilities, error) {
		return nil, errors.New("reading the server version: connection refused")
	}
	_, err = (&Gatherer{Capabilities: failing}).Gather(t.Context(), needing{needs: Needs{Capabilities: true}}, Request{})
	if want := "discovering the cluster's version and API versions for .Capabilities: reading the server version: connection refused"; err == nil || err.Error() != want {
		t.Errorf("discovery failure: %v, want %q", err, want)
	}
}

func TestDiscoveryCapabilities(t *testing.T) {
	cs := kubefake.NewClientset()
	dc := cs.Discovery().(*discoveryfake.FakeDiscovery)
	dc.FakedServerVersion = &version.Info{GitVersion: "v1.37.2", Major: "1", Minor: "37"}
	dc.Resources = []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "monitoring.coreos.com/v1", APIResources: []metav1.APIResource{{Name: "servicemonitors", Kind: "ServiceMonitor"}}},
	}
	caps := DiscoveryCapabilities(dc, time.Hour)
	got, err := caps(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got.KubeVersion != "v1.37.2" {
		t.Errorf("kube version %q", got.KubeVersion)
	}
	want := []string{"apps/v1", "apps/v1/Deployment", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}
	if !reflect.DeepEqual(got.APIVersions, want) {
		t.Errorf("APIVersions = %v, want %v", got.APIVersions, want)
	}
	dc.FakedServerVersion = &version.Info{GitVersion: "v1.38.0"}
	if again, _ := caps(t.Context()); again != got {
		t.Error("capabilities must be reused within the TTL")
	}
	if fresh, _ := DiscoveryCapabilities(dc, 0)(t.Context()); fresh.KubeVersion != "v1.38.0" {
		t.Errorf("ttl 0 must ask every time: %q", fresh.KubeVersion)
	}
}
