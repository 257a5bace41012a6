package preview

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestReadOnlyClientRefusesWrites(t *testing.T) {
	var sent []string // the writes that reached the client
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			o := &client.CreateOptions{}
			o.ApplyOptions(opts)
			sent = append(sent, "create dryRun="+strings.Join(o.DryRun, ","))
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			sent = append(sent, "update")
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			sent = append(sent, "patch")
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			sent = append(sent, "delete")
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			sent = append(sent, "delete all of")
			return c.DeleteAllOf(ctx, obj, opts...)
		},
	}).Build()
	ro := readOnlyClient{Client: c}
	ctx := context.Background()
	ns := func() *corev1.Namespace { return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}} }
	for name, write := range map[string]func() error{
		"create": func() error { return ro.Create(ctx, ns()) },
		"update": func() error { return ro.Update(ctx, ns()) },
		"patch": func() error {
			return ro.Patch(ctx, ns(), client.RawPatch("application/merge-patch+json", []byte(`{}`)))
		},
		"delete":        func() error { return ro.Delete(ctx, ns()) },
		"delete all of": func() error { return ro.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace("x")) },
		"status":        func() error { return ro.Status().Update(ctx, ns(), client.DryRunAll) },
	} {
		if err := write(); err == nil || !strings.Contains(err.Error(), "refusing to") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if len(sent) != 0 {
		t.Errorf("refused writes reached the client: %q", sent)
	}
	if err := ro.Create(ctx, ns(), client.DryRunAll); err != nil {
		t.Errorf("a dry run is allowed: %v", err)
	}
	if want := "create dryRun=" + metav1.DryRunAll; len(sent) != 1 || sent[0] != want {
		t.Errorf("writes %q, want %q", sent, want)
	}
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss); err != nil || len(nss.Items) != 0 {
		t.Errorf("namespaces after a dry run: %v %v", nss.Items, err)
	}
}
