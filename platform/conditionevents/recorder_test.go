package conditionevents

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestEventsAreSent: every Event recorded, on many objects at once, reaches the API (here a fake
// clientset), and none is left behind when the manager stops.
func TestEventsAreSent(t *testing.T) {
	cs := fake.NewClientset()
	rec, stop, err := newRecorderWithClient(cs.EventsV1(), scheme.Scheme, "test-controller")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stop.Start(ctx) }()
	const n = 300
	for i := range n {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "default", UID: "uid"}}
		rec.Eventf(obj, nil, corev1.EventTypeNormal, "Installed", "Install", "object %d installed", i)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == n, err
	})
	if err != nil {
		t.Fatalf("waiting for %d Events: %v", n, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestClientHasTheConfigsLimit: the Events' client sends at the configuration's rate, not at
// client-go's default of 5 requests per second.
func TestClientHasTheConfigsLimit(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", QPS: 200, Burst: 400}
	_, stop, err := NewRecorder(cfg, scheme.Scheme, "test-controller")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := stop.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := newEventsClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if qps := cl.RESTClient().GetRateLimiter().QPS(); qps != 200 {
		t.Errorf("the Events' client allows %v requests per second, want 200", qps)
	}
}
