package migrate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// TestAllSubscriptionsIncludesUnfinishedMigrations: --all-namespaces takes every Subscription and
// every migration left unfinished after its Subscription was deleted, not the finished ones.
func TestAllSubscriptionsIncludesUnfinishedMigrations(t *testing.T) {
	s := runtime.NewScheme()
	if err := operatorsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	s.AddKnownTypeWithName(GVKSubscription, &unstructured.Unstructured{})
	s.AddKnownTypeWithName(GVKSubscription.GroupVersion().WithKind("SubscriptionList"), &unstructured.UnstructuredList{})
	sub := &unstructured.Unstructured{}
	sub.SetGroupVersionKind(GVKSubscription)
	sub.SetNamespace("ops")
	sub.SetName("live")
	op := func(name, from, phase string) *operatorsv1alpha1.Operator {
		return &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{AnnotationMigratedFrom: from, AnnotationMigrationPhase: phase}}}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(sub,
		op("half", MigratedFrom("ops", "gone", "half.v1"), PhaseReleasing),
		op("done", MigratedFrom("ops", "finished", "done.v1"), PhaseComplete),
		&operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	).Build()
	got, err := allSubscriptions(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ops/gone", "ops/live"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSplitKey(t *testing.T) {
	for in, want := range map[string][2]string{"ops/sub": {"ops", "sub"}, "sub": {"default", "sub"}} {
		if ns, name := splitKey(in); ns != want[0] || name != want[1] {
			t.Errorf("%s: %s %s", in, ns, name)
		}
	}
}

func TestSubscriptionKey(t *testing.T) {
	for _, tc := range []struct{ ns, arg, want, err string }{
		{"ops", "widget", "ops/widget", ""},
		{"ops", "team-a/widget", "team-a/widget", ""},
		{"ops", "a/b/c", "", `subscription "a/b/c": name a Subscription as NAME (in the -n namespace) or NAMESPACE/NAME`},
		{"ops", "/widget", "", `subscription "/widget"`},
		{"ops", "", "", `subscription ""`},
	} {
		got, err := subscriptionKey(tc.ns, tc.arg)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("subscriptionKey(%q, %q) = %q, %v; want %q, %q", tc.ns, tc.arg, got, err, tc.want, tc.err)
		}
	}
}
