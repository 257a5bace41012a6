package statuspatch

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func cm(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}
}

// TestLag: reads at the resourceVersions the writes were computed from are behind until the cache
// shows another one, which ends the wait for good; other objects are never behind; MaxLag bounds
// the wait; Forget drops it.
func TestLag(t *testing.T) {
	var l Lag
	if l.Behind(cm("1")) {
		t.Fatal("behind before any write")
	}
	l.Wrote(cm("1"), "1") // the finalizer added to the read at 1 (→ 2)
	l.Wrote(cm("2"), "2") // the status patched from the read at 2 (→ 3)
	for _, rv := range []string{"1", "2", "2"} {
		if !l.Behind(cm(rv)) {
			t.Errorf("a read at %s, from before the writes, is not behind", rv)
		}
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", ResourceVersion: "1"}}
	if l.Behind(other) {
		t.Error("another object is behind")
	}
	if l.Behind(cm("3")) {
		t.Error("the read at 3, after the writes, is behind")
	}
	if l.Behind(cm("2")) {
		t.Error("behind again after the cache showed a newer read (an informer's cache never goes back)")
	}

	l.Wrote(cm("5"), "5")
	l.Forget(client.ObjectKeyFromObject(cm("")))
	if l.Behind(cm("5")) {
		t.Error("behind after Forget")
	}

	l.Wrote(cm("7"), "7")
	v, _ := l.m.Load(client.ObjectKeyFromObject(cm("")))
	v.(*lagEntry).since = time.Now().Add(-MaxLag - time.Second)
	if l.Behind(cm("7")) {
		t.Error("behind for longer than MaxLag")
	}
	l.Wrote(cm("8"), "")
	if l.Behind(cm("")) {
		t.Error("a write without the read's resourceVersion holds reads back")
	}
}
