package controller

import (
	"context"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// operatorLists counts the reconciler's listings of every Operator (not those by a label): each is
// one full read of the resolution's inputs.
var operatorLists = &listCounter{}

type listCounter struct{ n atomic.Int64 }

func (c *listCounter) wrap(cl client.Client) client.Client { return &countingClient{Client: cl, c: c} }

type countingClient struct {
	client.Client
	c *listCounter
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	// Every Operator: the dependency Operators, listed by their label, do not count.
	if _, ok := list.(*operatorsv1alpha1.OperatorList); ok && (&client.ListOptions{}).ApplyOptions(opts).LabelSelector == nil {
		c.c.n.Add(1)
	}
	return c.Client.List(ctx, list, opts...)
}

// TestStatusChangesReuseTheResolution: a BundleDeployment's status changes (rukpak reporting
// Installed, Healthy, Unhealthy) reach the Operator without its reconciles listing every Operator
// and BundleDeployment again: resolution reads none of it, and no informer counted a change to what
// it reads. Ten status changes, each seen on the Operator, list at most a few times (a reconcile of
// another test's Operator may still run), where each reconcile listed once before.
func TestStatusChangesReuseTheResolution(t *testing.T) {
	serveCatalog(t, "reuse", "h1", packageFBC("reuse", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "reuse-op", operatorsv1alpha1.OperatorSpec{PackageName: "reuse"})
	waitForBDImage(t, "reuse-op", image("reuse", "1.0.0"))
	playRukpak(t, "reuse-op", true, true)
	waitForCondition(t, "reuse-op", operatorsv1alpha1.TypeHealthy, metav1.ConditionTrue, operatorsv1alpha1.ReasonHealthy)

	before := operatorLists.n.Load()
	for i := 0; i < 10; i++ {
		healthy := i%2 == 1
		playRukpak(t, "reuse-op", true, healthy)
		if healthy {
			waitForCondition(t, "reuse-op", operatorsv1alpha1.TypeHealthy, metav1.ConditionTrue, operatorsv1alpha1.ReasonHealthy)
		} else {
			waitForCondition(t, "reuse-op", operatorsv1alpha1.TypeHealthy, metav1.ConditionFalse, operatorsv1alpha1.ReasonUnhealthy)
		}
	}
	lists := operatorLists.n.Load() - before
	t.Logf("10 status changes: %d listings of every Operator", lists)
	if lists > 3 {
		t.Errorf("10 BundleDeployment status changes listed every Operator %d times; want at most 3 (none of it is read by resolution)", lists)
	}

	// A change that resolution reads is still seen: the catalog offers 1.1.0, the Operator moves.
	serveCatalog(t, "reuse", "h2", packageFBC("reuse", bundleFBC{version: "1.0.0"}, bundleFBC{version: "1.1.0", replaces: "1.0.0"}), nil)
	waitForBDImage(t, "reuse-op", image("reuse", "1.1.0"))
}
