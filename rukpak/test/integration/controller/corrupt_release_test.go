package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// Unreadable release records (issue 18): a damaged record stops every write of its
// BundleDeployment with Installed=False/ReleaseCorrupt, the installed objects keep running as they
// are, and setting the record aside (or deleting it) lets rukpak continue with the next revision,
// adopting the objects in place.

func recordName(bd string, version int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", bd, version)
}

func getRecord(t *testing.T, key string) *corev1.Secret {
	t.Helper()
	s, err := clientset.CoreV1().Secrets(systemNamespace).Get(t.Context(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func updateRecord(t *testing.T, s *corev1.Secret) {
	t.Helper()
	if _, err := clientset.CoreV1().Secrets(systemNamespace).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// truncateRecord cuts the gzipped record in Secret key in half, as a partial write would.
func truncateRecord(t *testing.T, key string) {
	t.Helper()
	s := getRecord(t, key)
	raw, err := base64.StdEncoding.DecodeString(string(s.Data["release"]))
	if err != nil {
		t.Fatal(err)
	}
	s.Data["release"] = []byte(base64.StdEncoding.EncodeToString(raw[:len(raw)/2]))
	updateRecord(t, s)
}

// rewriteRecord decodes the record in Secret key, lets change edit its JSON and stores it again,
// encoded as Helm encodes it.
func rewriteRecord(t *testing.T, key string, change func(rec map[string]any)) {
	t.Helper()
	s := getRecord(t, key)
	raw, err := base64.StdEncoding.DecodeString(string(s.Data["release"]))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	j, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]any{}
	if err := json.Unmarshal(j, &rec); err != nil {
		t.Fatal(err)
	}
	change(rec)
	if j, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(j)
	_ = zw.Close()
	s.Data["release"] = []byte(base64.StdEncoding.EncodeToString(b.Bytes()))
	updateRecord(t, s)
}

// uidsOf returns the UIDs of ConfigMaps names in namespace ns.
func uidsOf(t *testing.T, ns string, names ...string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, n := range names {
		cm, err := getCM(t, ns, n)
		if err != nil {
			t.Fatalf("ConfigMap %s/%s: %v", ns, n, err)
		}
		out[n] = cm.UID
	}
	return out
}

// wantConfigMaps asserts each ConfigMap exists with its UID from uids and data.value want[name].
func wantConfigMaps(t *testing.T, ns string, uids map[string]types.UID, want map[string]string) {
	t.Helper()
	for n, v := range want {
		cm, err := getCM(t, ns, n)
		switch {
		case err != nil:
			t.Errorf("ConfigMap %s/%s: %v", ns, n, err)
		case uids[n] != "" && cm.UID != uids[n]:
			t.Errorf("ConfigMap %s/%s was replaced: UID %s, was %s", ns, n, cm.UID, uids[n])
		case cm.Data["value"] != v:
			t.Errorf("ConfigMap %s/%s has value %q, want %q", ns, n, cm.Data["value"], v)
		}
	}
}

func waitRevision(t *testing.T, name string, revision int64) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	var bd *rukpakv1alpha1.BundleDeployment
	waitFor(t, fmt.Sprintf("revision %d of %s", revision, name), func(ctx context.Context) (bool, error) {
		bd = waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
		return bd.Status.InstalledRevision == revision, nil
	})
	return bd
}

// TestCorruptDeployedRecordIsSetAside: the deployed revision's record is truncated; an upgrade is
// refused with ReleaseCorrupt and changes nothing; the record is set aside with the command the
// message gives, and the upgrade proceeds as revision 3 over the same objects.
func TestCorruptDeployedRecordIsSetAside(t *testing.T) {
	const name = "corrupt-aside"
	writeBundle(t, "example.com/corrupt-aside:v1", map[string]string{"a.yaml": configMap("a", "1"), "b.yaml": configMap("b", "1")})
	writeBundle(t, "example.com/corrupt-aside:v2", map[string]string{"a.yaml": configMap("a", "2"), "b.yaml": configMap("b", "2")})
	writeBundle(t, "example.com/corrupt-aside:v3", map[string]string{"a.yaml": configMap("a", "3"), "c.yaml": configMap("c", "3")})
	newBD(t, name, "example.com/corrupt-aside:v1")
	waitRevision(t, name, 1)
	setRef(t, name, "example.com/corrupt-aside:v2")
	waitRevision(t, name, 2)
	uids := uidsOf(t, name, "a", "b")

	key := recordName(name, 2)
	truncateRecord(t, key)
	damaged := getRecord(t, key).Data["release"]

	// The next revision would prune b and create c: neither may happen on an unreadable record.
	setRef(t, name, "example.com/corrupt-aside:v3")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, apply.ReasonReleaseCorrupt)
	msg := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message
	t.Logf("Installed=False/%s: %s", apply.ReasonReleaseCorrupt, msg)
	for _, part := range []string{systemNamespace + "/" + key, `revision 2 of BundleDeployment "corrupt-aside"`, "truncated",
		"changes nothing and leaves the installed objects running",
		"kubectl label secret -n " + systemNamespace + " " + key + " owner=rukpak-set-aside --overwrite", "or delete it",
		"(revision 2 stays installed)"} {
		if !strings.Contains(msg, part) {
			t.Errorf("Installed message %q does not say %q", msg, part)
		}
	}
	if bd.Status.InstalledRevision != 2 || len(bd.Status.History) != 2 {
		t.Errorf("status while the record is unreadable: installedRevision %d, history %+v; want 2 and revisions 2, 1 kept", bd.Status.InstalledRevision, bd.Status.History)
	}
	wantConfigMaps(t, name, uids, map[string]string{"a": "2", "b": "2"})
	if _, err := getCM(t, name, "c"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap c of the refused revision exists: %v", err)
	}
	if !bytes.Equal(getRecord(t, key).Data["release"], damaged) {
		t.Error("the damaged record was overwritten")
	}
	if _, err := clientset.CoreV1().Secrets(systemNamespace).Get(t.Context(), recordName(name, 3), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a record of revision 3 was written on top of an unreadable history: %v", err)
	}

	// Recovery: the command from the message.
	s := getRecord(t, key)
	s.Labels["owner"] = apply.SetAsideOwner
	updateRecord(t, s)
	recovering := time.Now()
	bd = waitRevision(t, name, 3)
	t.Logf("set aside: revision 3 installed %v later", time.Since(recovering).Round(time.Millisecond))
	wantConfigMaps(t, name, uids, map[string]string{"a": "3", "b": "2"}) // b: nothing is pruned on recovery
	if _, err := getCM(t, name, "c"); err != nil {
		t.Errorf("ConfigMap c of revision 3: %v", err)
	}
	wantStatuses(t, name, map[int]release.Status{1: release.StatusSuperseded, 3: release.StatusDeployed})
	if aside := getRecord(t, key); !bytes.Equal(aside.Data["release"], damaged) {
		t.Error("the record set aside was not kept as it was")
	}
	if len(bd.Status.History) != 2 || bd.Status.History[0].Revision != 3 || bd.Status.History[1].Revision != 1 {
		t.Errorf("status.history after recovery: %+v; want revisions 3, 1", bd.Status.History)
	}

	// And the history goes on: revision 4 prunes what revision 3 dropped.
	writeBundle(t, "example.com/corrupt-aside:v4", map[string]string{"a.yaml": configMap("a", "4")})
	setRef(t, name, "example.com/corrupt-aside:v4")
	waitRevision(t, name, 4)
	wantConfigMaps(t, name, uids, map[string]string{"a": "4"})
	if _, err := getCM(t, name, "c"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap c, dropped by revision 4, was not pruned: %v", err)
	}
}

// TestUnlabelledRecordIsDeleted: the deployed (only) record loses its owner label, so the history
// looks empty; drift on an installed object is not reverted on top of that, and once the record
// is deleted rukpak installs revision 1 again over the same objects and reverts the drift.
func TestUnlabelledRecordIsDeleted(t *testing.T) {
	const name = "corrupt-unlabelled"
	writeBundle(t, "example.com/corrupt-unlabelled:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newBD(t, name, "example.com/corrupt-unlabelled:v1")
	waitRevision(t, name, 1)
	uids := uidsOf(t, name, "a")

	key := recordName(name, 1)
	s := getRecord(t, key)
	delete(s.Labels, "owner")
	updateRecord(t, s)
	// Drift makes rukpak apply again.
	cm, _ := getCM(t, name, "a")
	cm.Data["value"] = "by hand"
	if err := k8s.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, apply.ReasonReleaseCorrupt)
	msg := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled).Message
	for _, part := range []string{key, `owner=""`, "leave it out of the history", "or delete it"} {
		if !strings.Contains(msg, part) {
			t.Errorf("Installed message %q does not say %q", msg, part)
		}
	}
	wantConfigMaps(t, name, uids, map[string]string{"a": "by hand"})

	if err := clientset.CoreV1().Secrets(systemNamespace).Delete(t.Context(), key, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	recovering := time.Now()
	waitRevision(t, name, 1)
	t.Logf("deleted: revision 1 installed again %v later", time.Since(recovering).Round(time.Millisecond))
	waitFor(t, "the drift to be reverted", func(ctx context.Context) (bool, error) {
		cm, err := getCM(t, name, "a")
		return err == nil && cm.Data["value"] == "1", err
	})
	wantConfigMaps(t, name, uids, map[string]string{"a": "1"})
	wantStatuses(t, name, map[int]release.Status{1: release.StatusDeployed})
}

// TestCorruptRecordBlocksUninstall: deleting a BundleDeployment whose history cannot be read
// deletes nothing (the finalizer stays); once the record is set aside, the objects the readable
// records name are deleted and the BundleDeployment goes.
func TestCorruptRecordBlocksUninstall(t *testing.T) {
	const name = "corrupt-uninstall"
	writeBundle(t, "example.com/corrupt-uninstall:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newBD(t, name, "example.com/corrupt-uninstall:v1")
	waitRevision(t, name, 1)
	uids := uidsOf(t, name, "a")
	key := recordName(name, 1)
	rewriteRecord(t, key, func(rec map[string]any) { rec["manifest"] = "{{{ not yaml" })

	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	var events corev1.EventList
	waitFor(t, "an UninstallFailed event naming the record", func(ctx context.Context) (bool, error) {
		if err := k8s.List(ctx, &events, client.MatchingFields{"involvedObject.name": name}); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "UninstallFailed" && strings.Contains(e.Message, key) && strings.Contains(e.Message, "its manifest") {
				return true, nil
			}
		}
		return false, nil
	})
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatalf("the BundleDeployment must wait for its record to be dealt with: %v", err)
	}
	wantConfigMaps(t, name, uids, map[string]string{"a": "1"})

	s := getRecord(t, key)
	s.Labels["owner"] = apply.SetAsideOwner
	updateRecord(t, s)
	waitFor(t, "the BundleDeployment to be gone", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, bd)), nil
	})
	// Its only readable record is gone with it, so nothing names ConfigMap a any more: it stays.
	wantConfigMaps(t, name, uids, map[string]string{"a": "1"})
	if aside := getRecord(t, key); aside.Labels["owner"] != apply.SetAsideOwner {
		t.Errorf("the record set aside was not kept: %v", aside.Labels)
	}
}

// TestCorruptRecordStopsEveryWrite: on the engine, for every kind of damage to the deployed
// record, Apply of new content and Uninstall return ReleaseCorrupt without a single write to an
// object or to the record.
func TestCorruptRecordStopsEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, key string)
		says   string
	}{
		{"truncated", truncateRecord, "truncated"},
		{"not base64", func(t *testing.T, key string) {
			s := getRecord(t, key)
			s.Data["release"] = []byte("%%% not base64")
			updateRecord(t, s)
		}, "not base64"},
		{"garbage manifest", func(t *testing.T, key string) {
			rewriteRecord(t, key, func(rec map[string]any) { rec["manifest"] = "kind: [unclosed" })
		}, "its manifest"},
		{"record of another release", func(t *testing.T, key string) {
			rewriteRecord(t, key, func(rec map[string]any) { rec["name"] = "somebody-else" })
		}, `release "somebody-else"`},
		{"status label", func(t *testing.T, key string) {
			s := getRecord(t, key)
			s.Labels["status"] = "superseded"
			updateRecord(t, s)
		}, `status="superseded"`},
		{"pending status left behind, damaged", func(t *testing.T, key string) {
			rewriteRecord(t, key, func(rec map[string]any) {
				rec["info"].(map[string]any)["status"] = "pending-upgrade"
				rec["manifest"] = "kind: [unclosed"
			})
			s := getRecord(t, key)
			s.Labels["status"] = "pending-upgrade"
			updateRecord(t, s)
		}, "its manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "engine-corrupt-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
			createNamespace(t, name)
			var mu sync.Mutex
			var writes []string
			record := func(what string) {
				mu.Lock()
				defer mu.Unlock()
				writes = append(writes, what)
			}
			e := testEngine(t, engineHooks{
				beforeApply:  func(_ context.Context, _ runtime.ApplyConfiguration) { record("apply") },
				beforeDelete: func(_ context.Context, obj client.Object) { record("delete " + obj.GetName()) },
			})
			v1 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "1", "a", "b")}
			v2 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "2", "a", "c")}
			if _, err := e.Apply(t.Context(), v1); err != nil {
				t.Fatal(err)
			}
			uids := uidsOf(t, name, "a", "b")
			key := recordName(name, 1)
			tc.damage(t, key)
			before := getRecord(t, key)
			writes = nil

			for what, err := range map[string]error{
				"Apply of new content": func() error { _, err := e.Apply(t.Context(), v2); return err }(),
				"Apply of the same content": func() error {
					_, err := e.Apply(t.Context(), v1)
					return err
				}(),
				"Uninstall": func() error { _, err := e.Uninstall(t.Context(), name, false, false); return err }(),
			} {
				var ae *apply.Error
				if !errors.As(err, &ae) || ae.Reason != apply.ReasonReleaseCorrupt || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: %v; want reason %s naming %s and saying %q", what, err, apply.ReasonReleaseCorrupt, key, tc.says)
				}
			}
			if len(writes) > 0 {
				t.Errorf("objects were written on an unreadable history: %v", writes)
			}
			wantConfigMaps(t, name, uids, map[string]string{"a": "1", "b": "1"})
			if _, err := getCM(t, name, "c"); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap c exists: %v", err)
			}
			after := getRecord(t, key)
			if after.ResourceVersion != before.ResourceVersion {
				t.Error("the damaged record was written to")
			}
			if _, err := clientset.CoreV1().Secrets(systemNamespace).Get(t.Context(), recordName(name, 2), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a record of revision 2 was created: %v", err)
			}
		})
	}
}

// TestRevisionNumbersAroundGapsAndSetAsideRecords: a gap in the history (a record deleted by hand)
// is harmless, and a new revision is numbered past a record set aside instead of overwriting it.
func TestRevisionNumbersAroundGapsAndSetAsideRecords(t *testing.T) {
	const name = "engine-gaps"
	createNamespace(t, name)
	e := testEngine(t, engineHooks{})
	apply1 := func(value string, names ...string) int {
		t.Helper()
		res, err := e.Apply(t.Context(), apply.Request{Name: name, Namespace: name, Objects: configMaps(name, value, names...)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Revision
	}
	apply1("1", "a", "b")
	apply1("2", "a", "b")
	apply1("3", "a")
	if err := clientset.CoreV1().Secrets(systemNamespace).Delete(t.Context(), recordName(name, 2), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Revision 5 exists already, set aside (e.g. by an earlier recovery that was then rolled back).
	aside := getRecord(t, recordName(name, 1)).DeepCopy()
	aside.ObjectMeta = metav1.ObjectMeta{Name: recordName(name, 5), Labels: map[string]string{"owner": apply.SetAsideOwner, "name": name, "version": "5"}}
	if _, err := clientset.CoreV1().Secrets(systemNamespace).Create(t.Context(), aside, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := apply1("4", "a", "c"); got != 4 {
		t.Errorf("after a gap: revision %d, want 4", got)
	}
	if got := apply1("5", "a"); got != 6 {
		t.Errorf("with revision 5 set aside: revision %d, want 6", got)
	}
	wantStatuses(t, name, map[int]release.Status{1: release.StatusSuperseded, 3: release.StatusSuperseded, 4: release.StatusSuperseded, 6: release.StatusDeployed})
	if _, err := getCM(t, name, "c"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap c, dropped by revision 6, was not pruned: %v", err)
	}
	if kept := getRecord(t, recordName(name, 5)); !bytes.Equal(kept.Data["release"], aside.Data["release"]) || kept.Labels["owner"] != apply.SetAsideOwner {
		t.Error("the record set aside as revision 5 was changed")
	}
}
