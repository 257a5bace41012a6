package apply

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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

// recordsOf stores revisions 1 (superseded) and 2 (deployed) of release "bd"; revision 2 is split
// over 3 Secrets when chunked is set.
func recordsOf(t *testing.T, chunked bool) (*fake.Clientset, *ChunkedSecrets) {
	t.Helper()
	cs := fake.NewClientset()
	d := &ChunkedSecrets{Client: cs.CoreV1().Secrets("sys"), Namespace: "sys"}
	rnd := rand.New(rand.NewPCG(3, 4))
	var big strings.Builder
	for i := 0; i < 3000; i++ {
		big.WriteByte(byte('a' + rnd.IntN(26)))
	}
	for v, st := range map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed} {
		d.ChunkSize = DefaultChunkSize
		if chunked && v == 2 {
			d.ChunkSize = 1024
		}
		if err := d.Create(recordKey("bd", v), &release.Release{Name: "bd", Version: v, Manifest: big.String(), Info: &release.Info{Status: st}}); err != nil {
			t.Fatal(err)
		}
	}
	return cs, d
}

func gz(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func b64(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }

// TestCorruptRecordsAreReported: every way the deployed record can be damaged is reported as a
// *CorruptReleaseError that names its Secret, says what is wrong and what to do; none is skipped.
func TestCorruptRecordsAreReported(t *testing.T) {
	const key = "sh.helm.release.v1.bd.v2"
	for _, tc := range []struct {
		name    string
		chunked bool
		damage  func(s *corev1.Secret)
		problem string
	}{
		{"not base64", false, func(s *corev1.Secret) { s.Data["release"] = []byte("!!not base64!!") }, "not base64"},
		{"not gzip", false, func(s *corev1.Secret) { s.Data["release"] = b64(append([]byte{0x1f, 0x8b, 0x08}, "garbage"...)) }, "not a gzip stream"},
		{"truncated", false, func(s *corev1.Secret) {
			raw, _ := base64.StdEncoding.DecodeString(string(s.Data["release"]))
			s.Data["release"] = b64(raw[:len(raw)/2])
		}, "damaged or truncated"},
		{"not JSON", false, func(s *corev1.Secret) { s.Data["release"] = b64(gz(t, "{not json")) }, "not a JSON release record"},
		{"no release key", false, func(s *corev1.Secret) { delete(s.Data, "release") }, `no data key "release"`},
		{"no status", false, func(s *corev1.Secret) { s.Data["release"] = b64(gz(t, `{"name":"bd","version":2}`)) }, "no status"},
		{"unknown status", false, func(s *corev1.Secret) {
			s.Data["release"] = b64(gz(t, `{"name":"bd","version":2,"info":{"status":"exploded"}}`))
		}, `status "exploded"`},
		{"another revision's record", false, func(s *corev1.Secret) {
			s.Data["release"] = b64(gz(t, `{"name":"bd","version":7,"info":{"status":"deployed"}}`))
		}, "revision 7"},
		{"version label", false, func(s *corev1.Secret) { s.Labels["version"] = "9" }, `version="9" (the record says "2")`},
		{"status label", false, func(s *corev1.Secret) { s.Labels["status"] = "superseded" }, `status="superseded" (the record says "deployed")`},
		{"chunk annotation", true, func(s *corev1.Secret) { s.Annotations[chunksAnnotation] = "many" }, `"many", not a number of chunks`},
		{"missing chunk", true, nil, "chunk 2 of 3, Secret sh.helm.release.v1.bd.v2.c2, is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, d := recordsOf(t, tc.chunked)
			secrets := cs.CoreV1().Secrets("sys")
			if tc.damage != nil {
				s, err := secrets.Get(context.Background(), key, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				tc.damage(s)
				if _, err := secrets.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if err := secrets.Delete(context.Background(), key+".c2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := d.Query(map[string]string{"name": "bd", "owner": "helm"})
			var ce *CorruptReleaseError
			if !errors.As(err, &ce) {
				t.Fatalf("Query: %v, want a *CorruptReleaseError", err)
			}
			msg := ce.Error()
			for _, part := range []string{"sys/" + key, `revision 2 of BundleDeployment "bd"`, tc.problem,
				"kubectl label secret -n sys " + key + " owner=rukpak-set-aside --overwrite", "or delete it"} {
				if !strings.Contains(msg, part) {
					t.Errorf("message %q does not say %q", msg, part)
				}
			}
			if _, err := d.Get(key); !errors.As(err, &ce) {
				t.Errorf("Get: %v, want a *CorruptReleaseError", err)
			}
			// Revision 1 is fine and still readable on its own.
			if r, err := d.Get(recordKey("bd", 1)); err != nil || r.Version != 1 {
				t.Errorf("Get of the intact revision 1: %v", err)
			}
		})
	}
}

// TestSeveralCorruptRecordsAreNamed: the first unreadable record is described, the others named.
func TestSeveralCorruptRecordsAreNamed(t *testing.T) {
	cs, d := recordsOf(t, false)
	for _, v := range []int{1, 2} {
		s, _ := cs.CoreV1().Secrets("sys").Get(context.Background(), recordKey("bd", v), metav1.GetOptions{})
		s.Data["release"] = []byte("%%%")
		if _, err := cs.CoreV1().Secrets("sys").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := d.Query(map[string]string{"name": "bd", "owner": "helm"})
	var ce *CorruptReleaseError
	if !errors.As(err, &ce) || len(ce.Others) != 1 || !strings.Contains(err.Error(), "1 more unreadable record(s)") {
		t.Fatalf("Query: %v", err)
	}
}

// TestChunkReadFailureIsNotCorruption: an API error reading a chunk that exists may go away on
// retry; it is a plain error, not a record to set aside.
func TestChunkReadFailureIsNotCorruption(t *testing.T) {
	cs, d := recordsOf(t, true)
	cs.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if strings.HasSuffix(a.(k8stesting.GetAction).GetName(), ".c2") {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is busy"))
		}
		return false, nil, nil
	})
	_, err := d.Query(map[string]string{"name": "bd", "owner": "helm"})
	var ce *CorruptReleaseError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "etcd is busy") {
		t.Fatalf("Query: %v, want the API error, not a corrupt record", err)
	}
}

// TestCreateOnATakenName: a name held by a record set aside is skipped (SetAsideError, which is a
// driver.ErrReleaseExists) without touching its chunks; one held by a Secret whose labels left the
// history is a corrupt record.
func TestCreateOnATakenName(t *testing.T) {
	cs, d := recordsOf(t, true)
	secrets := cs.CoreV1().Secrets("sys")
	key := recordKey("bd", 2)
	chunkBefore, _ := secrets.Get(context.Background(), key+".c2", metav1.GetOptions{})

	s, _ := secrets.Get(context.Background(), key, metav1.GetOptions{})
	s.Labels["owner"] = SetAsideOwner
	if _, err := secrets.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next := &release.Release{Name: "bd", Version: 2, Manifest: strings.Repeat("z", 5000), Info: &release.Info{Status: release.StatusPendingUpgrade}}
	err := d.Create(key, next)
	var sa *SetAsideError
	if !errors.As(err, &sa) || !errors.Is(err, driver.ErrReleaseExists) {
		t.Fatalf("Create on a set-aside name: %v", err)
	}
	chunkAfter, _ := secrets.Get(context.Background(), key+".c2", metav1.GetOptions{})
	if !bytes.Equal(chunkBefore.Data["chunk"], chunkAfter.Data["chunk"]) {
		t.Error("the set-aside record's chunk was overwritten")
	}
	// Set aside, it is no longer part of the history.
	hist, err := d.Query(map[string]string{"name": "bd", "owner": "helm"})
	if err != nil || len(hist) != 1 || hist[0].Version != 1 {
		t.Fatalf("history with revision 2 set aside: %v %v", hist, err)
	}

	s.Labels = map[string]string{"team": "x"}
	if _, err := secrets.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = d.Create(key, next)
	var ce *CorruptReleaseError
	if !errors.As(err, &ce) || ce.Secret != key || !strings.Contains(err.Error(), "leave it out of the history") {
		t.Fatalf("Create on a name held by an unlabelled record: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for key, want := range map[string]string{
		"sh.helm.release.v1.bd.v2":      "bd 2",
		"sh.helm.release.v1.a.v1.b.v10": "a.v1.b 10",
		"sh.helm.release.v1.bd.vx":      "",
		"sh.helm.release.v1.bd":         "",
		"other":                         "",
	} {
		got := ""
		if name, v, ok := parseKey(key); ok {
			got = fmt.Sprintf("%s %d", name, v)
		}
		if got != want {
			t.Errorf("parseKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// withResourceVersions makes cs's Secrets keep resourceVersions as the API server does: every write
// gets a new one, and an update at another one is a Conflict (the fake stores neither).
func withResourceVersions(cs *fake.Clientset) {
	var next int
	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		next++
		a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).ResourceVersion = fmt.Sprint(next)
		return false, nil, nil // stored by the fake's tracker
	})
	cs.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
		cur, err := cs.Tracker().Get(secrets, a.GetNamespace(), s.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*corev1.Secret).ResourceVersion != s.ResourceVersion {
			return true, nil, apierrors.NewConflict(secrets.GroupResource(), s.Name, errors.New("the object has been modified"))
		}
		next++
		s.ResourceVersion = fmt.Sprint(next)
		return false, nil, nil
	})
}

// TestRecordWritesAreFewRequests: a record that fits in one Secret is created with one request and
// replaced with one (at the resourceVersion the driver last saw); a record changed by someone else
// since is read and replaced at its new resourceVersion; every install writes three or more.
func TestRecordWritesAreFewRequests(t *testing.T) {
	cs := fake.NewClientset()
	withResourceVersions(cs)
	d := &ChunkedSecrets{Client: cs.CoreV1().Secrets("sys"), Namespace: "sys"}
	key := recordKey("bd", 1)
	rls := &release.Release{Name: "bd", Version: 1, Manifest: "kind: ConfigMap", Info: &release.Info{Status: release.StatusPendingInstall}}
	verbs := func(do func() error) []string {
		t.Helper()
		cs.ClearActions()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range cs.Actions() {
			out = append(out, a.GetVerb())
		}
		return out
	}
	if got := verbs(func() error { return d.Create(key, rls) }); !slices.Equal(got, []string{"create"}) {
		t.Errorf("Create sent %v, want [create]", got)
	}
	rls.Info.Status = release.StatusDeployed
	if got := verbs(func() error { return d.Update(key, rls) }); !slices.Equal(got, []string{"update"}) {
		t.Errorf("Update sent %v, want [update]", got)
	}
	got, err := d.Get(key)
	if err != nil || got.Info.Status != release.StatusDeployed {
		t.Fatalf("after Update: %v, %v", got, err)
	}
	// Someone else changes the Secret: the update at the resourceVersion the driver saw is refused,
	// and the driver reads the Secret and writes over it (as it always did).
	s, err := cs.CoreV1().Secrets("sys").Get(context.Background(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Labels["edited-by"] = "someone"
	if _, err := cs.CoreV1().Secrets("sys").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rls.Info.Status = release.StatusSuperseded
	if got := verbs(func() error { return d.Update(key, rls) }); !slices.Equal(got, []string{"update", "get", "update"}) {
		t.Errorf("Update after someone else's change sent %v, want [update get update]", got)
	}
	if got, err := d.Get(key); err != nil || got.Info.Status != release.StatusSuperseded {
		t.Fatalf("after the Update over someone else's change: %v, %v", got, err)
	}
	// A record read by this driver (Get) is replaced with one request too.
	rls.Info.Status = release.StatusDeployed
	if got := verbs(func() error { return d.Update(key, rls) }); !slices.Equal(got, []string{"update"}) {
		t.Errorf("Update after a Get sent %v, want [update]", got)
	}
	// A record deleted by someone else since is created again.
	if err := cs.CoreV1().Secrets("sys").Delete(context.Background(), key, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := verbs(func() error { return d.Update(key, rls) }); !slices.Equal(got, []string{"update", "get", "create"}) {
		t.Errorf("Update after someone else deleted the record sent %v, want [update get create]", got)
	}
	if got, err := d.Get(key); err != nil || got.Info.Status != release.StatusDeployed {
		t.Fatalf("after the Update of a deleted record: %v, %v", got, err)
	}
	// A taken name is still looked at: the same release's record is ErrReleaseExists.
	if err := d.Create(key, rls); !errors.Is(err, driver.ErrReleaseExists) {
		t.Errorf("Create on a taken name: %v, want ErrReleaseExists", err)
	}
	// Update of a record that is not there creates it.
	if got := verbs(func() error { return d.Update(recordKey("bd", 2), rls) }); !slices.Equal(got, []string{"get", "create"}) {
		t.Errorf("Update of a missing record sent %v, want [get create]", got)
	}
}
