package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

const timeout = 30 * time.Second

// bundleFBC describes one bundle of a package for packageFBC.
type bundleFBC struct {
	version  string
	replaces string // version it replaces
	extra    string // more properties, as JSON objects joined by commas
}

// packageFBC renders a package with one channel "stable" holding the bundles (JSON lines).
func packageFBC(pkg string, bundles ...bundleFBC) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
	var entries []string
	for _, bd := range bundles {
		e := fmt.Sprintf(`{"name":"%s.v%s"`, pkg, bd.version)
		if bd.replaces != "" {
			e += fmt.Sprintf(`,"replaces":"%s.v%s"`, pkg, bd.replaces)
		}
		entries = append(entries, e+"}")
	}
	fmt.Fprintf(&b, `{"schema":"olm.channel","package":%q,"name":"stable","entries":[%s]}`+"\n", pkg, strings.Join(entries, ","))
	for _, bd := range bundles {
		props := fmt.Sprintf(`{"type":"olm.package","value":{"packageName":%q,"version":%q}}`, pkg, bd.version)
		if bd.extra != "" {
			props += "," + bd.extra
		}
		fmt.Fprintf(&b, `{"schema":"olm.bundle","package":%q,"name":"%s.v%s","image":"%s","properties":[%s]}`+"\n",
			pkg, pkg, bd.version, image(pkg, bd.version), props)
	}
	return b.String()
}

func image(pkg, version string) string {
	return fmt.Sprintf("registry.test/%s-bundle:%s", pkg, version)
}

// serveCatalog creates (or updates) a Catalog named name whose content is fbc, and marks it served
// with a content hash derived from hash.
func serveCatalog(t *testing.T, name, hash, fbc string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	fixtures.set(name, fbc)
	cat := &catalogdv1alpha1.Catalog{}
	err := k8s.Get(ctx, types.NamespacedName{Name: name}, cat)
	if apierrors.IsNotFound(err) {
		cat = &catalogdv1alpha1.Catalog{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{
				Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "registry.test/" + name + ":latest"},
			}},
		}
		if err := k8s.Create(ctx, cat); err != nil {
			t.Fatalf("creating Catalog %s: %v", name, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), cat) })
	} else if err != nil {
		t.Fatal(err)
	}
	cat.Status.ContentHash = hash
	apimeta.SetStatusCondition(&cat.Status.Conditions, metav1.Condition{
		Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonServing,
		Message: "serving", ObservedGeneration: cat.Generation,
	})
	apimeta.SetStatusCondition(&cat.Status.Conditions, metav1.Condition{
		Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonUnpackSucceeded,
		Message: "unpacked", ObservedGeneration: cat.Generation,
	})
	if err := k8s.Status().Update(ctx, cat); err != nil {
		t.Fatalf("updating the status of Catalog %s: %v", name, err)
	}
}

func createOperator(t *testing.T, name string, spec operatorsv1alpha1.OperatorSpec) *operatorsv1alpha1.Operator {
	t.Helper()
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := k8s.Create(context.Background(), op); err != nil {
		t.Fatalf("creating Operator %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8s.Delete(ctx, op)
		// envtest runs no garbage collector: remove what the Operator owned ourselves.
		_ = k8s.Delete(ctx, &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}})
		// A later test may reuse the name: wait until the finalizer let it go.
		eventually(t, "Operator "+name+" deleted", func() error {
			if _, err := getOperator(name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	})
	return op
}

func updateOperator(t *testing.T, name string, mutate func(*operatorsv1alpha1.Operator)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		op := &operatorsv1alpha1.Operator{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, op); err != nil {
			return err
		}
		mutate(op)
		return k8s.Update(context.Background(), op)
	})
	if err != nil {
		t.Fatalf("updating Operator %s: %v", name, err)
	}
}

// eventually polls check until it returns nil or the timeout passes, then fails with its last error.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

// consistently checks that check keeps returning nil for d.
func consistently(t *testing.T, what string, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getOperator(name string) (*operatorsv1alpha1.Operator, error) {
	op := &operatorsv1alpha1.Operator{}
	return op, k8s.Get(context.Background(), types.NamespacedName{Name: name}, op)
}

func getBD(name string) (*rukpakv1alpha1.BundleDeployment, error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	return bd, k8s.Get(context.Background(), types.NamespacedName{Name: name}, bd)
}

// bdImage waits until the Operator's BundleDeployment references the image and returns it.
func waitForBDImage(t *testing.T, name, ref string) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	var bd *rukpakv1alpha1.BundleDeployment
	eventually(t, "BundleDeployment "+name+" references "+ref, func() error {
		var err error
		if bd, err = getBD(name); err != nil {
			if op, operr := getOperator(name); operr == nil {
				return fmt.Errorf("%v; Operator conditions: %+v", err, op.Status.Conditions)
			}
			return err
		}
		if bd.Spec.Source.Image == nil || bd.Spec.Source.Image.Ref != ref {
			return fmt.Errorf("source %+v", bd.Spec.Source)
		}
		return nil
	})
	return bd
}

// waitForCondition waits until the Operator's condition has the status and reason, and its message
// contains every one of msgs, for the current generation.
func waitForCondition(t *testing.T, name, condType string, status metav1.ConditionStatus, reason string, msgs ...string) *operatorsv1alpha1.Operator {
	t.Helper()
	var op *operatorsv1alpha1.Operator
	eventually(t, fmt.Sprintf("Operator %s %s=%s (%s)", name, condType, status, reason), func() error {
		var err error
		if op, err = getOperator(name); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(op.Status.Conditions, condType)
		if c == nil {
			return fmt.Errorf("no %s condition in %+v", condType, op.Status.Conditions)
		}
		if c.Status != status || c.Reason != reason || c.ObservedGeneration != op.Generation {
			return fmt.Errorf("condition %+v (generation %d)", *c, op.Generation)
		}
		for _, m := range msgs {
			if !strings.Contains(c.Message, m) {
				return fmt.Errorf("message %q does not contain %q", c.Message, m)
			}
		}
		return nil
	})
	return op
}

// playRukpak writes the status rukpak would: Installed (and Healthy) for the current generation.
func playRukpak(t *testing.T, name string, installed, healthy bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bd, err := getBD(name)
		if err != nil {
			return err
		}
		st := func(b bool) metav1.ConditionStatus {
			if b {
				return metav1.ConditionTrue
			}
			return metav1.ConditionFalse
		}
		reason := rukpakv1alpha1.ReasonInstallationSucceeded
		if !installed {
			reason = rukpakv1alpha1.ReasonInstallFailed
		}
		hreason := rukpakv1alpha1.ReasonHealthy
		if !healthy {
			hreason = rukpakv1alpha1.ReasonUnhealthy
		}
		bd.Status.ObservedGeneration = bd.Generation
		apimeta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: st(installed), Reason: reason, Message: "played by the test", ObservedGeneration: bd.Generation})
		apimeta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeHealthy, Status: st(healthy), Reason: hreason, Message: "played by the test", ObservedGeneration: bd.Generation})
		return k8s.Status().Update(context.Background(), bd)
	})
	if err != nil {
		t.Fatalf("writing the status of BundleDeployment %s: %v", name, err)
	}
}

func getNamespace(name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	return ns, k8s.Get(context.Background(), client.ObjectKey{Name: name}, ns)
}

// setBDConditions writes conditions to the BundleDeployment's status for its current generation, as
// rukpak would.
func setBDConditions(t *testing.T, name string, conds ...metav1.Condition) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bd, err := getBD(name)
		if err != nil {
			return err
		}
		bd.Status.ObservedGeneration = bd.Generation
		for _, c := range conds {
			c.ObservedGeneration = bd.Generation
			apimeta.SetStatusCondition(&bd.Status.Conditions, c)
		}
		return k8s.Status().Update(context.Background(), bd)
	})
	if err != nil {
		t.Fatalf("writing the status of BundleDeployment %s: %v", name, err)
	}
}
