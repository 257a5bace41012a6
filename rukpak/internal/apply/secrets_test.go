package apply

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestChunkedSecrets(t *testing.T) {
	cs := fake.NewClientset()
	d := &ChunkedSecrets{Client: cs.CoreV1().Secrets("sys"), ChunkSize: 512}
	// Random content does not compress, so it spans several chunks; a tiny release fits in one.
	rnd := rand.New(rand.NewPCG(1, 2))
	var big strings.Builder
	for i := 0; i < 3000; i++ {
		big.WriteByte(byte('a' + rnd.IntN(26)))
	}
	rls := &release.Release{Name: "bd", Version: 1, Manifest: big.String(), Info: &release.Info{Status: release.StatusDeployed}}
	if err := d.Create("sh.helm.release.v1.bd.v1", rls); err != nil {
		t.Fatal(err)
	}
	if err := d.Create("sh.helm.release.v1.bd.v1", rls); !errors.Is(err, driver.ErrReleaseExists) {
		t.Errorf("second Create: %v, want ErrReleaseExists", err)
	}
	list, _ := cs.CoreV1().Secrets("sys").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) < 3 {
		t.Fatalf("want the release split over several Secrets, got %d", len(list.Items))
	}
	got, err := d.Get("sh.helm.release.v1.bd.v1")
	if err != nil || got.Manifest != rls.Manifest {
		t.Fatalf("Get: %v, manifest round-trips: %v", err, got != nil && got.Manifest == rls.Manifest)
	}
	q, err := d.Query(map[string]string{"name": "bd", "owner": "helm"})
	if err != nil || len(q) != 1 {
		t.Fatalf("Query found %d releases (%v); chunks must not count as releases", len(q), err)
	}

	small := &release.Release{Name: "bd", Version: 1, Manifest: "x", Info: &release.Info{Status: release.StatusSuperseded}}
	if err := d.Update("sh.helm.release.v1.bd.v1", small); err != nil {
		t.Fatal(err)
	}
	list, _ = cs.CoreV1().Secrets("sys").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 1 || list.Items[0].Labels["status"] != "superseded" {
		t.Fatalf("after shrinking: %d Secrets (want 1, leftover chunks deleted), status label %q", len(list.Items), list.Items[0].Labels["status"])
	}
	if _, err := d.Query(map[string]string{"name": "bd", "status": "deployed"}); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("Query of a status nobody has: %v", err)
	}
	if err := d.Update("sh.helm.release.v1.bd.v1", rls); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Delete("sh.helm.release.v1.bd.v1"); err != nil {
		t.Fatal(err)
	}
	list, _ = cs.CoreV1().Secrets("sys").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 0 {
		t.Errorf("%d Secrets left after Delete", len(list.Items))
	}
	if _, err := d.Get("sh.helm.release.v1.bd.v1"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
}
