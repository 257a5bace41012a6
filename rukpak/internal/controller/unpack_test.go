package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

// noRenderer is never reached: the unpack fails first.
type noRenderer struct{}

func (noRenderer) Render(context.Context, provisioner.Request) ([]client.Object, error) {
	return nil, errors.New("not reached")
}

// An unpack that fails retryably is requeued with controller-runtime's backoff (the error is
// returned), unless the server said when to come back (Retry-After): then it is requeued after
// that, without an error. The Unpacked condition carries the source's message either way.
func TestUnpackFailureRequeue(t *testing.T) {
	busy := &source.Error{Kind: source.KindUnreachable, Reason: source.ReasonUnpackFailed, Retryable: true,
		Message: `registry r.test answered 503 Service Unavailable for image "r.test/b:v1"; will retry with backoff`}
	limited := &source.Error{Kind: source.KindUnreachable, Reason: source.ReasonUnpackFailed, Retryable: true, RetryAfter: 7 * time.Second,
		Message: `registry r.test answered 429 Too Many Requests for image "r.test/b:v1"; will retry in 7s, as the server asked (Retry-After)`}
	tooLarge := &source.Error{Kind: source.KindTooLarge, Reason: source.ReasonUnpackFailed,
		Message: `image "r.test/b:v1" is larger than the 1 MiB limit`}
	// The signature policy's failures keep their own reason (spec.source.image.verify).
	unsigned := &source.Error{Kind: source.KindUnsigned, Reason: source.ReasonUnsigned, Retryable: true,
		Message: `image "r.test/b:v1": image r.test/b@sha256:ab is not trusted (Unsigned): no signature found; policy: Secret "keys" with 1 key(s): sha256:cd`}
	invalid := &source.Error{Kind: source.KindSignatureInvalid, Reason: source.ReasonSignatureInvalid,
		Message: `image "r.test/b:v1": image r.test/b@sha256:ab is not trusted (SignatureInvalid): signed with another key; policy: Secret "keys" with 1 key(s): sha256:cd`}
	for _, tc := range []struct {
		name      string
		err       *source.Error
		wantErr   bool
		wantAfter time.Duration
		terminal  bool
	}{
		{"backoff", busy, true, 0, false},
		{"Retry-After", limited, false, 7 * time.Second, false},
		{"not retryable: terminal, no backoff", tooLarge, true, 0, true},
		{"Unsigned: backoff (the signature may come after the image)", unsigned, true, 0, false},
		{"SignatureInvalid: terminal", invalid, true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := rukpakv1alpha1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			bd := &rukpakv1alpha1.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1},
				Spec: rukpakv1alpha1.BundleDeploymentSpec{
					ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
					InstallNamespace:     "ns",
					Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "r.test/b:v1"}},
				},
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(bd).WithStatusSubresource(bd).Build()
			r := &BundleDeploymentReconciler{
				Client:    c,
				Unpacker:  unpackertest.Failing(tc.err),
				Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{rukpakv1alpha1.ProvisionerPlain: noRenderer{}},
			}
			res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "b"}})
			switch {
			case tc.wantErr && !errors.Is(err, tc.err):
				t.Errorf("Reconcile returned %v, want the unpack error (so that controller-runtime backs off)", err)
			case !tc.wantErr && err != nil:
				t.Errorf("Reconcile returned %v, want no error (a requeue after Retry-After)", err)
			case errors.Is(err, reconcile.TerminalError(nil)) != tc.terminal:
				t.Errorf("Reconcile returned %v: terminal %v, want %v", err, !tc.terminal, tc.terminal)
			}
			if res.RequeueAfter != tc.wantAfter {
				t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, tc.wantAfter)
			}
			got := &rukpakv1alpha1.BundleDeployment{}
			if err := c.Get(t.Context(), types.NamespacedName{Name: "b"}, got); err != nil {
				t.Fatal(err)
			}
			u := meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypeUnpacked)
			if u == nil || u.Status != metav1.ConditionFalse || u.Reason != tc.err.Reason || u.Message != tc.err.Message {
				t.Errorf("Unpacked %+v, want False %s %q", u, tc.err.Reason, tc.err.Message)
			}
		})
	}
}
