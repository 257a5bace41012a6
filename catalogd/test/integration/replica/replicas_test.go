package replica

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// pushCatalog builds a catalog image of package foo at version and pushes it as repoAndTag.
func pushCatalog(t *testing.T, reg *sourcetest.Registry, repoAndTag, version string) string {
	t.Helper()
	dir := t.TempDir()
	body := fmt.Sprintf(`{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v%[1]s"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v%[1]s","image":"example.com/foo:v%[1]s","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"%[1]s"}}]}
`, version)
	if err := os.MkdirAll(filepath.Join(dir, "foo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "foo", "catalog.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, img, repoAndTag)
	return reg.Ref(repoAndTag)
}

func createCatalog(t *testing.T, name, ref string) {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: catalogdv1alpha1.CatalogSpec{
		Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage,
			Image: &rukpakv1alpha1.ImageSource{Ref: ref, InsecureSkipTLSVerify: true}}}}
	if err := env.client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCatalog(name) })
}

// removeCatalog deletes a Catalog and its finalizer (the replicas may be stopped already), so that
// no test sees another's Catalog.
func removeCatalog(name string) {
	ctx := context.Background()
	cat := &catalogdv1alpha1.Catalog{}
	if err := env.client.Get(ctx, client.ObjectKey{Name: name}, cat); err != nil {
		return
	}
	_ = env.client.Delete(ctx, cat)
	patch := client.MergeFrom(cat.DeepCopy())
	cat.Finalizers = nil
	_ = env.client.Patch(ctx, cat, patch)
}

func setRef(t *testing.T, name, ref string) {
	t.Helper()
	cat := getCatalog(t, name)
	patch := client.MergeFrom(cat.DeepCopy())
	cat.Spec.Source.Image.Ref = ref
	if err := env.client.Patch(t.Context(), cat, patch); err != nil {
		t.Fatal(err)
	}
}

func getCatalog(t *testing.T, name string) *catalogdv1alpha1.Catalog {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{}
	if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
		t.Fatal(err)
	}
	return cat
}

// eventually polls cond every 100 ms for up to 30 s; cond returns "" when satisfied, else what is
// still missing.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing := cond()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s: %s", what, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitServing waits until the status says generation gen is served and returns its content hash.
func waitServing(t *testing.T, name string, gen int64) string {
	t.Helper()
	var cat *catalogdv1alpha1.Catalog
	eventually(t, fmt.Sprintf("catalog %s serves generation %d", name, gen), func() string {
		cat = getCatalog(t, name)
		c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing)
		if cat.Generation == gen && c != nil && c.Status == metav1.ConditionTrue && c.Reason == catalogdv1alpha1.ReasonServing &&
			c.ObservedGeneration == gen && cat.Status.ContentHash != "" {
			return ""
		}
		return fmt.Sprintf("generation %d, conditions %+v", cat.Generation, cat.Status.Conditions)
	})
	return cat.Status.ContentHash
}

// fetch GETs /catalogs/<name>/all.json from h and returns the status code, the ETag and the sha256
// of the body.
func fetch(h http.Handler, name string) (code int, etag, bodyHash string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, serve.URLPath(name), nil))
	sum := sha256.Sum256(rec.Body.Bytes())
	return rec.Code, rec.Header().Get("ETag"), "sha256:" + hex.EncodeToString(sum[:])
}

// serves is "" when p's own content handler serves hash for name, else what it serves.
func (p *proc) serves(name, hash string) string {
	code, etag, body := fetch(p.handler, name)
	if code == http.StatusOK && etag == `"`+hash+`"` && body == hash {
		return ""
	}
	return fmt.Sprintf("replica %s answers %d, ETag %s, body %s; want %s", p.name, code, etag, body, hash)
}

// inSync is "" when p serves hash for name and its readiness check passes.
func (p *proc) inSync(name, hash string) string {
	if s := p.serves(name, hash); s != "" {
		return s
	}
	if err := p.ready(); err != nil {
		return fmt.Sprintf("replica %s is not ready: %v", p.name, err)
	}
	return ""
}

// throughFront GETs all.json n times through the front's one address and checks that every answer
// is hash; it returns how many each replica answered.
func throughFront(t *testing.T, f *front, url, name, hash string, n int) map[string]int {
	t.Helper()
	f.servedBy()
	for i := range n {
		resp, err := http.Get(url + serve.URLPath(name))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		if got := "sha256:" + hex.EncodeToString(sum[:]); resp.StatusCode != http.StatusOK || got != hash {
			t.Fatalf("request %d through the front: %d, content %s; want 200 and %s", i, resp.StatusCode, got, hash)
		}
	}
	return f.servedBy()
}

// statusWriters returns the field managers that wrote the Catalog's status.
func statusWriters(t *testing.T, name string) []string {
	t.Helper()
	var out []string
	for _, mf := range getCatalog(t, name).ManagedFields {
		if mf.Subresource == "status" {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// TestEveryReplicaServesWhatTheStatusNames: a leader and a standby behind one address. The standby
// unpacks the exact image digest the leader's status names into its own store and serves the same
// content hash; both follow an update and both drop a deleted catalog; only the leader writes
// status.
func TestEveryReplicaServesWhatTheStatusNames(t *testing.T) {
	const name = "replicated"
	reg := sourcetest.NewRegistry(t)
	v1 := pushCatalog(t, reg, "catalogs/foo:v1", "1.0.0")
	v2 := pushCatalog(t, reg, "catalogs/foo:v2", "2.0.0")

	a := startReplica(t, "catalogd-a", t.TempDir(), "catalogd-every-replica")
	eventually(t, "replica a leads", func() string {
		if a.elected() {
			return ""
		}
		return "not elected"
	})
	b := startReplica(t, "catalogd-b", t.TempDir(), "catalogd-every-replica")
	f, url := newFront(t, a, b)

	createCatalog(t, name, v1)
	hash1 := waitServing(t, name, 1)
	for _, p := range []*proc{a, b} {
		eventually(t, p.name+" serves "+hash1, func() string { return p.inSync(name, hash1) })
	}
	if b.elected() {
		t.Fatalf("replica b leads too")
	}
	if served := throughFront(t, f, url, name, hash1, 10); served[a.name] != 5 || served[b.name] != 5 {
		t.Errorf("requests answered per replica through the front: %v, want 5 each", served)
	}

	setRef(t, name, v2)
	hash2 := waitServing(t, name, 2)
	if hash2 == hash1 {
		t.Fatalf("new image, same hash %s", hash2)
	}
	for _, p := range []*proc{a, b} {
		eventually(t, p.name+" follows the update to "+hash2, func() string { return p.inSync(name, hash2) })
	}
	throughFront(t, f, url, name, hash2, 4)
	if w := statusWriters(t, name); len(w) != 1 || w[0] != a.name {
		t.Errorf("status written by %v, want only the leader %s", w, a.name)
	}

	if err := env.client.Delete(t.Context(), getCatalog(t, name)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Catalog is gone", func() string {
		err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, &catalogdv1alpha1.Catalog{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("get: %v", err)
	})
	for _, p := range []*proc{a, b} {
		eventually(t, p.name+" drops the deleted catalog", func() string {
			_, stored := p.store.Get(name)
			code, _, _ := fetch(p.handler, name)
			if _, err := os.Stat(filepath.Join(p.store.Root(), name)); !stored && code == http.StatusNotFound && os.IsNotExist(err) {
				return ""
			}
			return fmt.Sprintf("stored %v, all.json answers %d", stored, code)
		})
		if err := p.ready(); err != nil {
			t.Errorf("%s not ready after the deletion: %v", p.name, err)
		}
	}
}

// TestReplicaIsReadyOnlyOnceItServesTheStatus: a replica started on an empty store is not Ready
// (and gets no requests through the front) until it has loaded the content the status names; the
// standby takes over when the leader stops and unpacks an update itself; the old leader, restarted
// on its old store, is behind and not Ready until it has caught up.
func TestReplicaIsReadyOnlyOnceItServesTheStatus(t *testing.T) {
	const name = "late"
	reg := sourcetest.NewRegistry(t)
	v1 := pushCatalog(t, reg, "catalogs/late:v1", "1.0.0")
	v2 := pushCatalog(t, reg, "catalogs/late:v2", "2.0.0")

	aDir := t.TempDir()
	a := startReplica(t, "catalogd-a", aDir, "catalogd-late")
	eventually(t, "replica a leads", func() string {
		if a.elected() {
			return ""
		}
		return "not elected"
	})
	createCatalog(t, name, v1)
	hash1 := waitServing(t, name, 1)
	eventually(t, "the leader is ready", func() string { return a.inSync(name, hash1) })

	// The registry stops answering: a new replica on an empty store cannot load the content.
	reg.Hang(true)
	b := startReplica(t, "catalogd-b", t.TempDir(), "catalogd-late")
	f, url := newFront(t, a, b)
	eventually(t, "b reports why it is not ready", func() string {
		err := b.ready()
		if err != nil && strings.Contains(err.Error(), fmt.Sprintf("%q (status names %s, serving nothing; last attempt: image ", name, hash1)) {
			return ""
		}
		return fmt.Sprintf("readiness: %v", err)
	})
	if served := throughFront(t, f, url, name, hash1, 6); served[b.name] != 0 || served[a.name] != 6 {
		t.Errorf("requests answered per replica while b is not ready: %v, want all by %s", served, a.name)
	}
	reg.Hang(false)
	eventually(t, "b has loaded the content", func() string { return b.inSync(name, hash1) })
	if served := throughFront(t, f, url, name, hash1, 6); served[b.name] != 3 {
		t.Errorf("requests answered per replica once b is ready: %v, want 3 each", served)
	}

	// The leader stops (releasing its Lease): b takes over, and its reconciler unpacks an update.
	a.stop(t)
	eventually(t, "replica b leads", func() string {
		if b.elected() {
			return ""
		}
		return "not elected"
	})
	setRef(t, name, v2)
	hash2 := waitServing(t, name, 2)
	eventually(t, "the new leader serves the update", func() string { return b.inSync(name, hash2) })
	if w := statusWriters(t, name); !slices.Contains(w, b.name) {
		t.Errorf("status written by %v, want the new leader %s among them", w, b.name)
	}

	// a restarts on its old store, which holds generation 1's content: it is behind until it loads
	// generation 2's.
	reg.Hang(true)
	a2 := startReplica(t, "catalogd-a", aDir, "catalogd-late")
	eventually(t, "the restarted replica reports that it is behind", func() string {
		err := a2.ready()
		if err != nil && strings.Contains(err.Error(), fmt.Sprintf("%q (status names %s, serving %s", name, hash2, hash1)) {
			return ""
		}
		return fmt.Sprintf("readiness: %v", err)
	})
	reg.Hang(false)
	eventually(t, "the restarted replica catches up", func() string { return a2.inSync(name, hash2) })
	if a2.elected() {
		t.Errorf("the restarted replica leads while b holds the Lease")
	}
}

// TestLeaderOnEmptyStoreKeepsTheLastGoodContent: the only replica is replaced by one on an empty
// store while the latest spec cannot be unpacked. The new leader loads the content the status
// names again (the last good one), keeps Serving=True on it, and is Ready.
func TestLeaderOnEmptyStoreKeepsTheLastGoodContent(t *testing.T) {
	const name = "last-good"
	reg := sourcetest.NewRegistry(t)
	v1 := pushCatalog(t, reg, "catalogs/last-good:v1", "1.0.0")

	a := startReplica(t, "catalogd-a", t.TempDir(), "catalogd-last-good")
	createCatalog(t, name, v1)
	hash1 := waitServing(t, name, 1)
	setRef(t, name, reg.Ref("catalogs/last-good:missing"))
	eventually(t, "generation 2 fails and generation 1 stays served", func() string {
		return servingPrevious(getCatalog(t, name), hash1)
	})
	a.stop(t)

	c := startReplica(t, "catalogd-c", t.TempDir(), "catalogd-last-good")
	eventually(t, "the new leader serves the last good content", func() string { return c.inSync(name, hash1) })
	if !c.elected() {
		t.Errorf("the only replica does not lead")
	}
	cat := getCatalog(t, name)
	if s := servingPrevious(cat, hash1); s != "" {
		t.Errorf("after the new leader reconciled: %s", s)
	}
	if u := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked); u == nil || u.Reason != catalogdv1alpha1.ReasonUnpackFailed {
		t.Errorf("Unpacked: %+v, want UnpackFailed for the missing tag", u)
	}
}

// servingPrevious is "" when cat says it serves hash, the content of an earlier generation.
func servingPrevious(cat *catalogdv1alpha1.Catalog, hash string) string {
	s := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing)
	if s != nil && s.Status == metav1.ConditionTrue && s.Reason == catalogdv1alpha1.ReasonServingPreviousContent &&
		s.ObservedGeneration == cat.Generation && cat.Status.ContentHash == hash {
		return ""
	}
	return fmt.Sprintf("generation %d, hash %s, Serving %+v", cat.Generation, cat.Status.ContentHash, s)
}
