package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

// newImage is an unpacker whose image reg/foo:latest is digest with a catalog of package foo whose
// channel lists channelEntry.
func newImage(t *testing.T, digest, channelEntry string) *unpackertest.Unpacker {
	t.Helper()
	fbc := fmt.Sprintf(`{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":%q}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"example.com/foo:v1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}
`, channelEntry)
	u := unpackertest.New(t)
	u.PushAs("reg/foo:latest", digest, map[string]string{"catalog.json": fbc})
	return u
}

func newStepsReconciler(t *testing.T, u source.Unpacker) *CatalogReconciler {
	t.Helper()
	store, err := storage.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &CatalogReconciler{Loader: replica.NewLoader(u, store, ""), ContentBaseURL: "https://catalogd",
		Now: func() time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) }}
}

func imageCatalog(poll time.Duration) *catalogdv1alpha1.Catalog {
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "reg/foo:latest"}}
	if poll > 0 {
		src.Image.PollInterval = &metav1.Duration{Duration: poll}
	}
	return &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "foo", Generation: 2},
		Spec: catalogdv1alpha1.CatalogSpec{Source: src}}
}

// TestUnpackStepsDecideReasonAndRetry: the step error of a failed step sets Unpacked's reason and
// message, and decides what Reconcile returns.
func TestUnpackStepsDecideReasonAndRetry(t *testing.T) {
	notFound := &source.Error{Kind: source.KindNotFound, Reason: source.ReasonUnpackFailed, Retryable: true, Message: `image "reg/foo:latest" not found`}
	busy := &source.Error{Kind: source.KindUnreachable, Reason: source.ReasonUnpackFailed, Retryable: true, RetryAfter: 42 * time.Second, Message: "429"}
	badRef := &source.Error{Kind: source.KindInvalidSource, Reason: source.ReasonUnpackFailed, Message: "malformed reference (check spec.source.image.ref)"}
	cases := map[string]struct {
		unpacker         func(t *testing.T) source.Unpacker
		poll             time.Duration
		reason, message  string
		terminal         bool
		want             ctrl.Result
		wantErr, backoff bool
	}{
		"not found is retried with backoff": {unpacker: func(*testing.T) source.Unpacker { return unpackertest.Failing(notFound) },
			poll: time.Minute, reason: catalogdv1alpha1.ReasonUnpackFailed, message: "generation 2: " + notFound.Message, wantErr: true, backoff: true},
		"Retry-After is honoured": {unpacker: func(*testing.T) source.Unpacker { return unpackertest.Failing(busy) },
			reason: catalogdv1alpha1.ReasonUnpackFailed, message: "generation 2: 429", want: ctrl.Result{RequeueAfter: 42 * time.Second}},
		"a bad reference waits for the next poll": {unpacker: func(*testing.T) source.Unpacker { return unpackertest.Failing(badRef) },
			poll: time.Minute, reason: catalogdv1alpha1.ReasonUnpackFailed, terminal: true, want: ctrl.Result{RequeueAfter: time.Minute}},
		"a bad reference without polling is terminal": {unpacker: func(*testing.T) source.Unpacker { return unpackertest.Failing(badRef) },
			reason: catalogdv1alpha1.ReasonUnpackFailed, terminal: true, wantErr: true},
		"an invalid catalog is terminal": {unpacker: func(t *testing.T) source.Unpacker { return newImage(t, "reg/foo@sha256:1", "foo.v9") },
			poll: time.Minute, reason: catalogdv1alpha1.ReasonInvalidCatalog, terminal: true, want: ctrl.Result{RequeueAfter: time.Minute},
			message: "generation 2: image reg/foo@sha256:1 is not a valid file-based catalog: "},
		"success keeps polling": {unpacker: func(t *testing.T) source.Unpacker { return newImage(t, "reg/foo@sha256:1", "foo.v1.0.0") },
			poll: time.Minute, reason: catalogdv1alpha1.ReasonUnpackSucceeded, message: "generation 2: unpacked image reg/foo@sha256:1 (sha256:",
			want: ctrl.Result{RequeueAfter: time.Minute}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newStepsReconciler(t, tc.unpacker(t))
			cat := imageCatalog(tc.poll)
			done, stepErr := r.unpackSteps(t.Context(), cat)
			out := outcome(cat.Generation, done, stepErr)
			if out.reason != tc.reason || !strings.HasPrefix(out.message, tc.message) {
				t.Errorf("outcome %+v, want reason %s and a message starting %q", out, tc.reason, tc.message)
			}
			if se, ok := step.As(stepErr); stepErr != nil && (!ok || se.Condition != catalogdv1alpha1.TypeUnpacked || se.Terminal != tc.terminal) {
				t.Errorf("step error %#v, want one on Unpacked, terminal %v", se, tc.terminal)
			}
			res, err := result(cat, stepErr)
			if res != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("result %+v, %v; want %+v, error %v", res, err, tc.want, tc.wantErr)
			}
			if err != nil && tc.backoff == errors.Is(err, reconcile.TerminalError(nil)) {
				t.Errorf("error %v: backoff %v, terminal %v", err, tc.backoff, errors.Is(err, reconcile.TerminalError(nil)))
			}
		})
	}
}

// TestUnpackStepsDescribeTheServedContent: a success fills the status fields that describe the
// served content; the same digest again is unchanged and fetches nothing.
func TestUnpackStepsDescribeTheServedContent(t *testing.T) {
	r := newStepsReconciler(t, newImage(t, "reg/foo@sha256:1", "foo.v1.0.0"))
	cat := imageCatalog(0)
	if _, err := r.unpackSteps(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	st := cat.Status
	served, ok := r.Loader.Store.Get("foo")
	if !ok || st.ContentHash != served.Hash || st.ServedGeneration != 2 || st.ResolvedSource.Image.Ref != "reg/foo@sha256:1" ||
		st.Counts == nil || st.Counts.Bundles != 1 || st.ContentURL != "https://catalogd/catalogs/foo/all.json" || st.LastUnpacked == nil {
		t.Fatalf("status after a success: %+v (store serves %v)", st, served)
	}
	cat.Generation = 3
	done, err := r.unpackSteps(t.Context(), cat)
	if err != nil || done != "image reg/foo@sha256:1 is unchanged ("+served.Hash+")" || cat.Status.ServedGeneration != 3 {
		t.Errorf("again: %q, %v, servedGeneration %d", done, err, cat.Status.ServedGeneration)
	}
}
