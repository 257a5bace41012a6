package certs

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/olmv1/olmv1/platform/pki"
)

func TestLoadOrRotateCA(t *testing.T) {
	secrets := fake.NewClientset().CoreV1().Secrets("sys")
	now := time.Now()
	ca1, prev, rotated, err := loadOrRotateCA(t.Context(), secrets, now, WebhookCAValidity)
	if err != nil || ca1 == nil || len(prev) != 0 || !rotated {
		t.Fatalf("first start: ca %v previous %d rotated %v err %v", ca1 != nil, len(prev), rotated, err)
	}
	again, _, rotated, err := loadOrRotateCA(t.Context(), secrets, now.Add(time.Hour), WebhookCAValidity)
	if err != nil || !again.Cert.Equal(ca1.Cert) || rotated {
		t.Fatalf("a restart must reuse the stored CA (rotated %v, err %v)", rotated, err)
	}
	// Past two thirds of its validity the CA is replaced, and the old one stays trusted.
	later := now.Add(WebhookCAValidity * 3 / 4)
	ca2, prev, rotated, err := loadOrRotateCA(t.Context(), secrets, later, WebhookCAValidity)
	if err != nil || ca2.Cert.Equal(ca1.Cert) || len(prev) != 1 || !prev[0].Cert.Equal(ca1.Cert) || !rotated {
		t.Fatalf("rotation: new CA %v, previous %d, rotated %v, err %v", ca2 != nil && !ca2.Cert.Equal(ca1.Cert), len(prev), rotated, err)
	}
	_, prev, _, err = loadOrRotateCA(t.Context(), secrets, later.Add(time.Hour), WebhookCAValidity)
	if err != nil || len(prev) != 1 {
		t.Fatalf("after rotation the previous CA is still passed until it expires: %d (%v)", len(prev), err)
	}
}

// fakeClock is a clock whose time moves only when the test says so. After returns a channel that
// fires once the clock reaches the deadline.
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.t
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.t.Add(d), ch: ch})
	return ch
}

// waitingUntil is the earliest deadline a goroutine waits for (zero when none waits).
func (c *fakeClock) waitingUntil() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	for _, w := range c.waiters {
		if first.IsZero() || w.at.Before(first) {
			first = w.at
		}
	}
	return first
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

// eventually polls cond every few milliseconds for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCARotatorRotatesWhileRunning runs the rotator with a CA valid for 6 hours on a fake clock: it
// re-reads the Secret every caRecheck (1 h) without changing anything, and once two thirds of the
// validity have passed it replaces the CA in its Secret, keeps the old one trusted, switches the
// provider and asks for every BundleDeployment to be re-rendered.
func TestCARotatorRotatesWhileRunning(t *testing.T) {
	const validity = 6 * time.Hour
	secrets := fake.NewClientset().CoreV1().Secrets("sys")
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: start}
	ca1, previous, _, err := loadOrRotateCA(t.Context(), secrets, start, validity)
	if err != nil {
		t.Fatal(err)
	}
	r := NewCARotator(secrets, validity)
	r.Clock = clock
	provider := r.Provider()
	provider.Rotate(ca1, previous...)
	var mu sync.Mutex
	resyncs := 0
	resynced := func() int {
		mu.Lock()
		defer mu.Unlock()
		return resyncs
	}
	r.OnRotate = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		resyncs++
		return nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	// loadOrRotateCA backdates NotBefore by an hour: the CA runs from start-1h to start+5h and needs
	// rotation from start+3h (a third of 6h left).
	rotateAt := pki.RenewAt(ca1.Cert)
	if want := start.Add(3 * time.Hour); !rotateAt.Equal(want) {
		t.Fatalf("RotateAt = %v, want %v", rotateAt, want)
	}
	for _, wake := range []time.Time{start.Add(time.Hour), start.Add(2 * time.Hour), rotateAt} {
		eventually(t, "the rotator sleeps until "+wake.String(), func() bool { return clock.waitingUntil().Equal(wake) })
		if !provider.CA().Cert.Equal(ca1.Cert) || resynced() != 0 {
			t.Fatalf("rotated before the rotation time (now %v)", clock.Now())
		}
		clock.set(wake)
	}
	eventually(t, "the provider signs with a new CA", func() bool { return !provider.CA().Cert.Equal(ca1.Cert) })
	eventually(t, "every BundleDeployment is re-rendered", func() bool { return resynced() == 1 })
	ca2 := provider.CA()

	// The Secret holds the new CA, and the replaced one as previous.
	s, err := secrets.Get(t.Context(), WebhookCASecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Data[corev1.TLSCertKey], ca2.CertPEM) || !bytes.Equal(s.Data[previousCert], ca1.CertPEM) {
		t.Error("the CA Secret does not hold the new CA with the replaced one as previous")
	}
	// Rendered objects trust both CAs while pods may still serve certificates of the old one.
	inj, err := provider.CAInjection(Service{Name: "webhook", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(inj.CABundle, ca1.CertPEM) || !bytes.Contains(inj.CABundle, ca2.CertPEM) {
		t.Error("caBundle does not hold both the new and the replaced CA")
	}
	objs, err := provider.Objects(Service{Name: "webhook", Namespace: "ns"})
	if err != nil || len(objs) != 1 {
		t.Fatalf("Objects: %d, %v", len(objs), err)
	}

	// Next it sleeps until the new CA's recheck; one that finds the CA unchanged re-renders nothing.
	next := clock.Now().Add(caRecheck)
	eventually(t, "the rotator sleeps again", func() bool { return clock.waitingUntil().Equal(next) })
	clock.set(next)
	eventually(t, "the rotator sleeps after the recheck", func() bool { return clock.waitingUntil().After(next) })
	if !provider.CA().Cert.Equal(ca2.Cert) || resynced() != 1 {
		t.Errorf("a recheck before the rotation time changed the CA or re-rendered (%d re-renders)", resynced())
	}
}

// Two replicas starting at once: the one whose create finds the Secret already there (or whose
// update is stale) reads it again and uses the CA the other stored.
func TestLoadOrRotateCARaceBetweenReplicas(t *testing.T) {
	cs := fake.NewClientset()
	secrets := cs.CoreV1().Secrets("sys")
	other := fake.NewClientset().CoreV1().Secrets("sys") // the other replica's view, to mint its CA
	otherCA, _, _, err := loadOrRotateCA(t.Context(), other, time.Now(), WebhookCAValidity)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := other.Get(t.Context(), WebhookCASecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raced := false
	cs.PrependReactor("create", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		// The other replica wins the create in between this replica's read and its create.
		if err := cs.Tracker().Add(stored.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), WebhookCASecretName)
	})
	ca, _, rotated, err := loadOrRotateCA(t.Context(), secrets, time.Now(), WebhookCAValidity)
	if err != nil || !raced || rotated || !ca.Cert.Equal(otherCA.Cert) {
		t.Fatalf("after losing the create: err %v, raced %v, rotated %v, same CA as the winner %v", err, raced, rotated, err == nil && ca.Cert.Equal(otherCA.Cert))
	}

	// A rotation that loses to another replica's rotation (stale resourceVersion) uses the winner's.
	later := time.Now().Add(WebhookCAValidity * 3 / 4)
	winner := stored.DeepCopy()
	conflicted := false
	cs.PrependReactor("update", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if conflicted {
			return false, nil, nil
		}
		conflicted = true
		certPEM, keyPEM, err := pki.GenerateCA("winner", later.Add(-time.Hour), WebhookCAValidity)
		if err != nil {
			t.Fatal(err)
		}
		winner.Data = map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
		if err := cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("secrets"), winner, "sys"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), WebhookCASecretName, nil)
	})
	ca, _, rotated, err = loadOrRotateCA(t.Context(), secrets, later, WebhookCAValidity)
	if err != nil || !conflicted || rotated || !bytes.Equal(ca.CertPEM, winner.Data[corev1.TLSCertKey]) {
		t.Fatalf("after losing the rotation: err %v, conflicted %v, rotated %v", err, conflicted, rotated)
	}
}

// After a failed pass the rotator waits caRetry, then as usual: until the CA needs rotation, at most
// caRecheck.
func TestCARotatorRetriesAfterAFailure(t *testing.T) {
	cs := fake.NewClientset()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewCARotator(cs.CoreV1().Secrets("sys"), 6*time.Hour)
	r.Clock = &fakeClock{t: start}
	if err := r.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := r.pass(t.Context()), start.Add(caRecheck); !got.Equal(want) {
		t.Errorf("after a pass that found nothing to do: next %v, want %v", got, want)
	}
	cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	if got, want := r.pass(t.Context()), start.Add(caRetry+caRecheck); !got.Equal(want) {
		t.Errorf("after a failed pass: next %v, want %v", got, want)
	}
	r.Clock = &fakeClock{t: start.Add(2*time.Hour + 30*time.Minute)} // the CA is due at start+3h
	if got, want := r.pass(t.Context()), start.Add(3*time.Hour); !got.Equal(want) {
		t.Errorf("after a failed pass close to the rotation time: next %v, want %v", got, want)
	}
}
