package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// BenchmarkEngineReapply measures one steady-state reconcile of the apply engine on a real API
// server: a 50-object revision that is already deployed is digested, compared with the stored
// revision and re-applied (server-side apply no-ops), which is what drift correction costs.
//
//	KUBEBUILDER_ASSETS=... go test -run '^$' -bench EngineReapply -benchmem ./test/integration/controller/
func BenchmarkEngineReapply(b *testing.B) {
	ctx := context.Background()
	const ns = "bench-engine"
	_ = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	var objs []client.Object
	for i := 0; i < 50; i++ {
		objs = append(objs, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)},
			Data:       map[string]string{"config.yaml": fmt.Sprintf("index: %d\nfeatures: [a, b, c]\n", i)},
		})
	}
	e := &apply.Engine{Client: k8s, Scheme: k8s.Scheme(), Storage: apply.NewSecretsStorage(clientset, systemNamespace, 10)}
	req := apply.Request{Name: "bench-engine", Namespace: ns, Objects: objs}
	if res, err := e.Apply(ctx, req); err != nil || !res.Changed {
		b.Fatalf("first apply: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.Apply(ctx, req)
		if err != nil || res.Changed {
			b.Fatalf("re-apply: changed=%v err=%v", res != nil && res.Changed, err)
		}
	}
	b.StopTimer()
	if _, err := e.Uninstall(ctx, "bench-engine", false, false); err != nil {
		b.Fatal(err)
	}
}
