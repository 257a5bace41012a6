// Package controller reconciles BundleDeployments: ensureFinalizer → unpack → render → apply →
// checkHealth, then the Unpacked, Installed and Healthy conditions are set in one place and the
// status is patched once.
package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/health"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

const (
	// Finalizer makes deleting a BundleDeployment uninstall what it applied.
	Finalizer = "core.rukpak.io/uninstall"
	// DeleteCRDsAnnotation set to "true" on a BundleDeployment makes its deletion also delete the
	// CustomResourceDefinitions it installed, and with them every custom resource of those kinds.
	// By default CRDs (and so users' data) are left in place.
	DeleteCRDsAnnotation = "core.rukpak.io/delete-crds-on-uninstall"
	// SkipCRDUpgradeSafetyAnnotation set to "true" disables the CRD upgrade-safety preflight.
	SkipCRDUpgradeSafetyAnnotation = "core.rukpak.io/skip-crd-upgrade-safety"

	// unhealthyRecheck is how often an unhealthy BundleDeployment is looked at again even when no
	// watched object changes.
	unhealthyRecheck = 30 * time.Second
)

// Preflight checks the objects of a new revision against the cluster before they are applied.
type Preflight func(ctx context.Context, objs []*unstructured.Unstructured) error

// BundleDeploymentReconciler installs BundleDeployments.
type BundleDeploymentReconciler struct {
	// Client reads BundleDeployments and writes their status and finalizer.
	Client client.Client
	// HealthReader reads the applied objects (the label-scoped cache).
	HealthReader client.Reader
	// EndpointReader reads the EndpointSlices of webhook Services (not the label-scoped cache);
	// when nil, webhook endpoints are not checked.
	EndpointReader client.Reader
	// Unpacker fetches spec.source.
	Unpacker source.Unpacker
	// Renderers by provisioner class; a class without one is reported as not supported.
	Renderers map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer
	// Engine applies revisions.
	Engine *apply.Engine
	// Preflight runs before a new revision unless the BundleDeployment opts out (optional).
	Preflight Preflight
	// Namespace is rukpak's namespace (Secrets and ConfigMaps named by sources).
	Namespace string
	// Recorder emits events on the BundleDeployment (optional).
	Recorder record.EventRecorder
	// Watches starts label-scoped watches of the applied kinds (optional).
	Watches *Watches
}

// stepError is a failed step: which condition it fails, with which reason, and whether retrying can
// help.
type stepError struct {
	condition string
	reason    string
	terminal  bool
	err       error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// state is what the steps of one reconcile learn.
type state struct {
	unpacked *source.Result
	hash     string
	objects  []client.Object
	applied  *apply.Result
	healthy  error
}

// Reconcile implements reconcile.Reconciler.
func (r *BundleDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, bd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, bd)
	}
	if err := r.ensureFinalizer(ctx, bd); err != nil {
		return ctrl.Result{}, err
	}

	orig := bd.DeepCopy()
	st := &state{}
	err := r.unpack(ctx, bd, st)
	if err == nil {
		err = r.render(ctx, bd, st)
	}
	if err == nil {
		err = r.apply(ctx, bd, st)
	}
	if err == nil {
		r.checkHealth(ctx, st)
	}
	r.setStatus(bd, st, err)
	r.emitEvents(orig, bd, st)
	if perr := r.Client.Status().Patch(ctx, bd, client.MergeFrom(orig)); perr != nil {
		return ctrl.Result{}, fmt.Errorf("patching the status of BundleDeployment %q: %w", bd.Name, perr)
	}

	var se *stepError
	switch {
	case errors.As(err, &se) && se.terminal:
		log.FromContext(ctx).Info("cannot proceed until the BundleDeployment or its bundle changes", "reason", se.reason, "message", se.err.Error())
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	case st.healthy != nil:
		return ctrl.Result{RequeueAfter: unhealthyRecheck}, nil
	}
	return ctrl.Result{RequeueAfter: pollInterval(bd.Spec.Source)}, nil
}

func (r *BundleDeploymentReconciler) ensureFinalizer(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	if controllerutil.ContainsFinalizer(bd, Finalizer) {
		return nil
	}
	patch := client.MergeFrom(bd.DeepCopy())
	controllerutil.AddFinalizer(bd, Finalizer)
	return r.Client.Patch(ctx, bd, patch)
}

func (r *BundleDeploymentReconciler) finalize(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	if !controllerutil.ContainsFinalizer(bd, Finalizer) {
		return nil
	}
	if err := r.Engine.Uninstall(ctx, bd.Name, bd.Annotations[DeleteCRDsAnnotation] == "true"); err != nil {
		if r.Recorder != nil {
			r.Recorder.Eventf(bd, "Warning", "UninstallFailed", "uninstalling: %v", err)
		}
		return fmt.Errorf("uninstalling BundleDeployment %q: %w", bd.Name, err)
	}
	if err := r.Unpacker.Cleanup(ctx, unpackKey(bd)); err != nil {
		return fmt.Errorf("removing the unpacked content of BundleDeployment %q: %w", bd.Name, err)
	}
	patch := client.MergeFrom(bd.DeepCopy())
	controllerutil.RemoveFinalizer(bd, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, bd, patch))
}

func unpackKey(bd *rukpakv1alpha1.BundleDeployment) string { return "bundledeployment/" + bd.Name }

func (r *BundleDeploymentReconciler) unpack(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	if r.Renderers[bd.Spec.ProvisionerClassName] == nil {
		return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed, terminal: true,
			err: fmt.Errorf("provisioner %q is not supported by this rukpak; use one of %v", bd.Spec.ProvisionerClassName, r.classes())}
	}
	res, err := r.Unpacker.Unpack(ctx, unpackKey(bd), bd.Spec.Source, source.Options{
		Namespace: r.Namespace,
		Previous:  bd.Status.ResolvedSource,
	})
	if err != nil {
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: rukpakv1alpha1.ReasonUnpackFailed, err: err}
	}
	st.unpacked = res
	if res.Unchanged && bd.Status.ContentHash != "" {
		st.hash = bd.Status.ContentHash
		return nil
	}
	st.hash, err = ContentHash(os.DirFS(res.Dir))
	if err != nil {
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: rukpakv1alpha1.ReasonUnpackFailed,
			err: fmt.Errorf("hashing the unpacked content in %s: %w", res.Dir, err)}
	}
	return nil
}

func (r *BundleDeploymentReconciler) render(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	objs, err := r.Renderers[bd.Spec.ProvisionerClassName].Render(ctx, provisioner.Request{
		Content:          os.DirFS(st.unpacked.Dir),
		Name:             bd.Name,
		InstallNamespace: bd.Spec.InstallNamespace,
		Config:           bd.Spec.Config,
	})
	var invalid *provisioner.InvalidBundleError
	switch {
	case errors.As(err, &invalid):
		reason := invalid.Reason
		if reason == "" {
			reason = rukpakv1alpha1.ReasonInvalidBundle
		}
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: reason, terminal: true, err: err}
	case err != nil:
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: rukpakv1alpha1.ReasonInvalidBundle, err: fmt.Errorf("rendering the bundle: %w", err)}
	}
	st.objects = objs
	return nil
}

func (r *BundleDeploymentReconciler) apply(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	req := apply.Request{
		Name:      bd.Name,
		Namespace: bd.Spec.InstallNamespace,
		Objects:   st.objects,
		Info:      map[string]interface{}{"contentHash": st.hash, "resolvedSource": st.unpacked.ResolvedSource},
	}
	if r.Preflight != nil && bd.Annotations[SkipCRDUpgradeSafetyAnnotation] != "true" {
		req.Preflight = r.Preflight
	}
	res, err := r.Engine.Apply(ctx, req)
	var ae *apply.Error
	if errors.As(err, &ae) {
		return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: ae.Reason, terminal: ae.Reason == apply.ReasonPreflightFailed, err: err}
	}
	if err != nil {
		return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed, err: err}
	}
	st.applied = res
	if r.Watches != nil {
		if err := r.Watches.Ensure(ctx, res.Objects); err != nil {
			return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed,
				err: fmt.Errorf("installed revision %d but cannot watch its objects for drift: %w", res.Revision, err)}
		}
	}
	return nil
}

func (r *BundleDeploymentReconciler) checkHealth(ctx context.Context, st *state) {
	reader := r.HealthReader
	if reader == nil {
		reader = r.Client
	}
	st.healthy = health.Check(ctx, reader, r.EndpointReader, st.applied.Objects)
}

// setStatus is the one place conditions are decided.
func (r *BundleDeploymentReconciler) setStatus(bd *rukpakv1alpha1.BundleDeployment, st *state, err error) {
	gen := bd.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	bd.Status.ObservedGeneration = gen
	var se *stepError
	if err != nil && !errors.As(err, &se) {
		se = &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed, err: err}
	}

	if st.unpacked != nil {
		bd.Status.ResolvedSource = st.unpacked.ResolvedSource.DeepCopy()
		bd.Status.ContentHash = st.hash
	}
	switch {
	case se != nil && se.condition == rukpakv1alpha1.TypeUnpacked:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, se.reason, se.Error())
	case st.unpacked != nil:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionTrue, rukpakv1alpha1.ReasonUnpackSucceeded,
			fmt.Sprintf("unpacked %s (%s)", describeResolved(st.unpacked.ResolvedSource), st.hash))
	case meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked) == nil:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionUnknown, rukpakv1alpha1.ReasonUnpackPending, "waiting for the bundle to be unpacked")
	}

	installed := bd.Status.InstalledRevision > 0
	switch {
	case st.applied != nil:
		bd.Status.InstalledRevision = int64(st.applied.Revision)
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded,
			fmt.Sprintf("revision %d is installed (%d objects)", st.applied.Revision, len(st.applied.Objects)))
		r.setHistory(bd)
	case se != nil && se.condition == rukpakv1alpha1.TypeInstalled:
		msg := se.Error()
		if installed {
			msg += fmt.Sprintf(" (revision %d stays installed)", bd.Status.InstalledRevision)
		}
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, se.reason, msg)
		r.setHistory(bd)
	case !installed:
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending, "nothing is installed until the bundle is unpacked and rendered")
	}

	switch {
	case st.applied != nil && st.healthy == nil:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy, "every installed object is ready")
	case st.applied != nil:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy, st.healthy.Error())
	case bd.Status.InstalledRevision == 0:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionUnknown, rukpakv1alpha1.ReasonHealthUnknown, "nothing is installed yet")
	}
}

// setHistory copies the newest deployed and superseded revisions into status.history.
func (r *BundleDeploymentReconciler) setHistory(bd *rukpakv1alpha1.BundleDeployment) {
	revs, err := r.Engine.History(bd.Name)
	if err != nil {
		return
	}
	var hist []rukpakv1alpha1.BundleDeploymentRevision
	for _, rev := range revs {
		if rev.Status != "deployed" && rev.Status != "superseded" {
			continue
		}
		h := rukpakv1alpha1.BundleDeploymentRevision{Revision: int64(rev.Version), InstalledAt: metav1.NewTime(rev.Deployed)}
		h.ContentHash, _ = rev.Info["contentHash"].(string)
		h.ResolvedSource = resolvedFromInfo(rev.Info["resolvedSource"])
		hist = append(hist, h)
		if len(hist) == 10 {
			break
		}
	}
	bd.Status.History = hist
}

func (r *BundleDeploymentReconciler) emitEvents(orig, bd *rukpakv1alpha1.BundleDeployment, st *state) {
	if r.Recorder == nil {
		return
	}
	if st.applied != nil && st.applied.Changed {
		r.Recorder.Eventf(bd, "Normal", "Installed", "installed revision %d (%s)", st.applied.Revision, st.hash)
	}
	for _, typ := range []string{rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.TypeHealthy} {
		now := meta.FindStatusCondition(bd.Status.Conditions, typ)
		before := meta.FindStatusCondition(orig.Status.Conditions, typ)
		if now == nil || now.Status == metav1.ConditionTrue || (before != nil && before.Reason == now.Reason && before.Message == now.Message) {
			continue
		}
		if now.Status == metav1.ConditionFalse {
			r.Recorder.Event(bd, "Warning", now.Reason, now.Message)
		}
	}
}

func (r *BundleDeploymentReconciler) classes() []rukpakv1alpha1.ProvisionerClassName {
	var out []rukpakv1alpha1.ProvisionerClassName
	for _, c := range []rukpakv1alpha1.ProvisionerClassName{rukpakv1alpha1.ProvisionerPlain, rukpakv1alpha1.ProvisionerRegistry,
		rukpakv1alpha1.ProvisionerHelm, rukpakv1alpha1.ProvisionerKustomize} {
		if r.Renderers[c] != nil {
			out = append(out, c)
		}
	}
	return out
}

func pollInterval(src rukpakv1alpha1.Source) time.Duration {
	switch {
	case src.Image != nil && src.Image.PollInterval != nil:
		return src.Image.PollInterval.Duration
	case src.HTTP != nil && src.HTTP.PollInterval != nil:
		return src.HTTP.PollInterval.Duration
	case src.Git != nil && src.Git.PollInterval != nil:
		return src.Git.PollInterval.Duration
	}
	return 0
}
