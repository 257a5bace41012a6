package controller

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// TestConcurrentInstallsAndUpgrades creates 12 BundleDeployments at once (the manager reconciles 8 at
// a time) and upgrades them all at once: each ends with its own objects, exactly its own release
// revisions, and no revision of another.
func TestConcurrentInstallsAndUpgrades(t *testing.T) {
	const n = 12
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("concurrent-%02d", i)
		writeBundle(t, "example.com/"+names[i]+":v1", map[string]string{"cm.yaml": configMap("settings", names[i]+"-v1")})
		writeBundle(t, "example.com/"+names[i]+":v2", map[string]string{"cm.yaml": configMap("settings", names[i]+"-v2"), "extra.yaml": configMap("extra", "x")})
	}
	for _, name := range names {
		newBD(t, name, "example.com/"+name+":v1")
	}
	for _, name := range names {
		waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	}
	for _, name := range names {
		setRef(t, name, "example.com/"+name+":v2")
	}
	for _, name := range names {
		bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
		if bd.Status.InstalledRevision != 2 || len(bd.Status.History) != 2 {
			t.Errorf("%s: installedRevision %d, %d revisions in history; want 2 and 2", name, bd.Status.InstalledRevision, len(bd.Status.History))
		}
		cm, err := getCM(t, name, "settings")
		if err != nil || cm.Data["value"] != name+"-v2" {
			t.Errorf("%s: ConfigMap settings = %v (%v), want %s-v2", name, cm.Data, err, name)
		}
		if _, err := getCM(t, name, "extra"); err != nil {
			t.Errorf("%s: ConfigMap extra: %v", name, err)
		}
		secrets, err := clientset.CoreV1().Secrets(systemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
		if err != nil || len(secrets.Items) != 2 {
			t.Errorf("%s: %d release Secrets (%v), want 2", name, len(secrets.Items), err)
		}
	}
}

// TestResyncAllReRenders: ResyncAll (what a webhook CA rotation calls) reconciles every
// BundleDeployment without any change to them; one whose rendered content changed meanwhile gets a
// new revision.
func TestResyncAllReRenders(t *testing.T) {
	const name = "resync"
	writeBundle(t, "example.com/resync:v1", map[string]string{"cm.yaml": configMap("settings", "before")})
	newBD(t, name, "example.com/resync:v1")
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	// The same ref now renders something else (as the registry+v1 renderer does after a CA rotation).
	writeBundle(t, "example.com/resync:v1", map[string]string{"cm.yaml": configMap("settings", "after")})
	if err := reconciler.ResyncAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the BundleDeployment to install revision 2", func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		return bd.Status.InstalledRevision == 2, nil
	})
	if cm, err := getCM(t, name, "settings"); err != nil || cm.Data["value"] != "after" {
		t.Errorf("ConfigMap settings = %v (%v), want the re-rendered value", cm.Data, err)
	}
}
