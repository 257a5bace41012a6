package controller

import (
	"testing"

	chart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// A rukpak killed after recording revision 2 deployed but before writing the status: the next
// process re-applies revision 2 unchanged, and status.history must still gain revision 2.
func TestHistoryCatchesUpAfterACrashBeforeTheStatusWrite(t *testing.T) {
	mem := driver.NewMemory()
	mem.SetNamespace("ns")
	store := storage.Init(mem)
	for v, st := range map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed} {
		now := helmtime.Now()
		if err := store.Create(&release.Release{Name: "bd", Namespace: "ns", Version: v,
			Chart:  &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "bd", Version: "0.0.0"}},
			Config: map[string]interface{}{"contentHash": "sha256:v" + string(rune('0'+v))},
			Info:   &release.Info{FirstDeployed: now, LastDeployed: now, Status: st}}); err != nil {
			t.Fatal(err)
		}
	}
	r := &BundleDeploymentReconciler{Engine: &apply.Engine{Storage: store}}
	bd := &rukpakv1alpha1.BundleDeployment{}
	bd.Name = "bd"
	bd.Status.InstalledRevision = 1
	bd.Status.History = []rukpakv1alpha1.BundleDeploymentRevision{{Revision: 1, ContentHash: "sha256:v1"}}
	r.setStatus(bd, &state{applied: &apply.Result{Revision: 2, Changed: false}}, nil)
	if bd.Status.InstalledRevision != 2 || len(bd.Status.History) != 2 || bd.Status.History[0].Revision != 2 || bd.Status.History[1].Revision != 1 {
		t.Fatalf("installedRevision %d, history %+v; want 2 and [2, 1]", bd.Status.InstalledRevision, bd.Status.History)
	}
}
