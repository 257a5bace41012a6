package statuspatch

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func podStatus(p *corev1.Pod) corev1.PodStatus { return p.Status }

// An unchanged status makes no request; a changed one is patched and reported; a failed patch
// names the kind and the object.
func TestIfChanged(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Message: "old"}}
	patches := 0
	var fail error
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			if fail != nil {
				return fail
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}).Build()

	before := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), before); err != nil {
		t.Fatal(err)
	}
	after := before.DeepCopy()
	after.Labels = map[string]string{"not": "status"}
	if patched, err := IfChanged(ctx, c, "Pod", before, after, podStatus); patched || err != nil || patches != 0 {
		t.Fatalf("unchanged status: patched %v, err %v, %d requests; want no request", patched, err, patches)
	}

	after.Status.Message = "new"
	if patched, err := IfChanged(ctx, c, "Pod", before, after, podStatus); !patched || err != nil || patches != 1 {
		t.Fatalf("changed status: patched %v, err %v, %d requests; want one patch", patched, err, patches)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Message != "new" || len(got.Labels) != 0 {
		t.Errorf("stored: status message %q, labels %v; want the new status and no labels (status only)", got.Status.Message, got.Labels)
	}

	fail = errors.New("boom")
	after.Status.Message = "newer"
	patched, err := IfChanged(ctx, c, "Pod", got, after, podStatus)
	if patched || !errors.Is(err, fail) || !strings.Contains(err.Error(), `patching the status of Pod "p"`) {
		t.Errorf("failed patch: patched %v, err %v; want false and an error naming Pod \"p\" that wraps the cause", patched, err)
	}
}
