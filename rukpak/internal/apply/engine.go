// Package apply installs the objects a provisioner rendered for a BundleDeployment and keeps them
// there. Every change of content is recorded as a Helm v3 release revision (Secrets driver, in
// rukpak's namespace), so `helm history -n <rukpak namespace> <bundledeployment>` shows it.
//
// Objects are applied with server-side apply (field manager "rukpak", forced), CRDs first and waited
// for until Established, so a bundle may carry both a CRD and objects of its kind. A failed upgrade
// is rolled back to the last deployed revision. Objects that a new revision no longer contains are
// deleted (pruned); CustomResourceDefinitions are never pruned, because deleting a CRD deletes every
// custom resource of it. Re-applying an unchanged revision reverts changes made by hand (drift).
package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	chart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// digestKey is the key of the manifest digest in a revision's Helm config.
const digestKey = "rukpakManifestDigest"

// FieldOwner is the server-side apply field manager of everything rukpak applies.
const FieldOwner = "rukpak"

// Engine applies rendered objects as Helm release revisions.
type Engine struct {
	// Client writes the objects (server-side apply) and knows the cluster's kinds (its RESTMapper).
	Client client.Client
	// Scheme names the kinds of typed objects a renderer returns.
	Scheme *runtime.Scheme
	// Storage keeps the release revisions.
	Storage *storage.Storage
	// CRDEstablishTimeout bounds the wait for applied CRDs to be Established (default 30s).
	CRDEstablishTimeout time.Duration
}

// Request is one desired state of a release.
type Request struct {
	// Name is the release name: the BundleDeployment's name.
	Name string
	// Namespace is where namespaced objects without a namespace go (spec.installNamespace).
	Namespace string
	// Objects are what the provisioner rendered.
	Objects []client.Object
	// Info is stored with a new revision (its Helm "config"), e.g. the content hash and resolved
	// source; it does not take part in deciding whether the content changed.
	Info map[string]interface{}
	// Preflight, when set, runs before a new revision is applied (not for an unchanged one) and
	// blocks it by returning an error.
	Preflight func(ctx context.Context, objs []*unstructured.Unstructured) error
}

// Result is the outcome of a successful Apply.
type Result struct {
	// Revision is the deployed revision.
	Revision int
	// Changed is true when a new revision was applied, false when the deployed one was re-applied.
	Changed bool
	// Objects are the applied objects, in apply order.
	Objects []*unstructured.Unstructured
}

// Reasons of an *Error, matching the BundleDeployment's Installed condition reasons.
const (
	ReasonInstallFailed   = "InstallFailed"
	ReasonUpgradeFailed   = "UpgradeFailed"
	ReasonPreflightFailed = "UpgradeBlocked"
)

// Error is a failed Apply, with the condition reason that describes it.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Apply makes the release Name match req. When the rendered manifest equals the deployed revision's,
// it re-applies it (reverting drift) without a new revision; otherwise it records and applies a new
// revision, prunes what the new revision dropped, and rolls back to the previous revision when
// applying fails.
func (e *Engine) Apply(ctx context.Context, req Request) (*Result, error) {
	objs, err := toUnstructured(e.Scheme, req.Name, req.Objects)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}
	if err := e.defaultNamespaces(objs, req.Namespace); err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}
	applyOrder(objs)
	digest, err := manifestDigest(objs)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}

	hist, err := e.history(req.Name)
	if err != nil {
		return nil, err
	}
	var deployed, last *release.Release
	for _, r := range hist {
		if r.Info != nil && r.Info.Status == release.StatusDeployed {
			deployed = r
		}
		last = r
	}
	if deployed != nil && deployed.Config[digestKey] == digest {
		if err := e.applyAll(ctx, objs); err != nil {
			return nil, &Error{Reason: ReasonInstallFailed, Err: fmt.Errorf("re-applying revision %d: %w", deployed.Version, err)}
		}
		return &Result{Revision: deployed.Version, Objects: objs}, nil
	}
	if req.Preflight != nil {
		if err := req.Preflight(ctx, objs); err != nil {
			return nil, &Error{Reason: ReasonPreflightFailed, Err: err}
		}
	}

	manifest, err := encodeManifest(objs)
	if err != nil {
		return nil, &Error{Reason: ReasonInstallFailed, Err: err}
	}
	info := map[string]interface{}{digestKey: digest}
	for k, v := range req.Info {
		info[k] = v
	}
	now := helmtime.Now()
	rel := &release.Release{
		Name:      req.Name,
		Namespace: req.Namespace,
		Manifest:  manifest,
		Config:    info,
		Chart: &chart.Chart{Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2, Name: req.Name, Version: "0.0.0",
			Description: "objects rendered by rukpak for BundleDeployment " + req.Name,
		}},
		Info: &release.Info{FirstDeployed: now, LastDeployed: now, Status: release.StatusPendingInstall, Description: "Install in progress"},
	}
	if deployed != nil {
		rel.Info.FirstDeployed = deployed.Info.FirstDeployed
		rel.Info.Status, rel.Info.Description = release.StatusPendingUpgrade, "Upgrade in progress"
	}
	switch {
	case last == nil:
		rel.Version = 1
	case last.Info != nil && last.Info.Status == release.StatusFailed && last.Config[digestKey] == digest:
		rel.Version = last.Version // retrying the same failed content: reuse its revision
	default:
		rel.Version = last.Version + 1
	}
	if last != nil && rel.Version == last.Version {
		err = e.Storage.Update(rel)
	} else {
		err = e.Storage.Create(rel)
	}
	if err != nil {
		return nil, fmt.Errorf("recording revision %d of release %q: %w", rel.Version, req.Name, err)
	}

	applyErr := e.applyAll(ctx, objs)
	if applyErr == nil && deployed != nil {
		applyErr = e.prune(ctx, deployed, objs)
	}
	if applyErr != nil {
		rel.SetStatus(release.StatusFailed, applyErr.Error())
		_ = e.Storage.Update(rel)
		if deployed == nil {
			return nil, &Error{Reason: ReasonInstallFailed, Err: fmt.Errorf("installing revision %d: %w", rel.Version, applyErr)}
		}
		rbErr := e.rollback(ctx, deployed, objs)
		msg := fmt.Errorf("upgrade to revision %d failed, rolled back to revision %d: %w", rel.Version, deployed.Version, applyErr)
		if rbErr != nil {
			msg = fmt.Errorf("upgrade to revision %d failed (%v), and rolling back to revision %d failed too: %w", rel.Version, applyErr, deployed.Version, rbErr)
		}
		return nil, &Error{Reason: ReasonUpgradeFailed, Err: msg}
	}
	if deployed != nil {
		deployed.SetStatus(release.StatusSuperseded, "Superseded by revision "+fmt.Sprint(rel.Version))
		if err := e.Storage.Update(deployed); err != nil {
			return nil, fmt.Errorf("marking revision %d superseded: %w", deployed.Version, err)
		}
		rel.SetStatus(release.StatusDeployed, "Upgrade complete")
	} else {
		rel.SetStatus(release.StatusDeployed, "Install complete")
	}
	if err := e.Storage.Update(rel); err != nil {
		return nil, fmt.Errorf("marking revision %d deployed: %w", rel.Version, err)
	}
	return &Result{Revision: rel.Version, Changed: true, Objects: objs}, nil
}

// Revision is one stored revision of a release.
type Revision struct {
	Version  int
	Status   string
	Deployed time.Time
	Info     map[string]interface{}
}

// History lists the stored revisions of release name, newest first.
func (e *Engine) History(name string) ([]Revision, error) {
	hist, err := e.history(name)
	if err != nil {
		return nil, err
	}
	out := make([]Revision, 0, len(hist))
	for i := len(hist) - 1; i >= 0; i-- {
		r := hist[i]
		out = append(out, Revision{Version: r.Version, Status: string(r.Info.Status), Deployed: r.Info.LastDeployed.Time, Info: r.Config})
	}
	return out, nil
}

// Uninstall deletes every object any stored revision of release name applied, then the revisions.
// CustomResourceDefinitions are deleted only when deleteCRDs is set.
func (e *Engine) Uninstall(ctx context.Context, name string, deleteCRDs bool) error {
	hist, err := e.history(name)
	if err != nil || len(hist) == 0 {
		return err
	}
	all := map[ObjectKey]*unstructured.Unstructured{}
	for _, r := range hist {
		objs, err := decodeManifest(r.Manifest)
		if err != nil {
			return err
		}
		for _, u := range objs {
			all[KeyOf(u)] = u
		}
	}
	var errs []string
	for k, u := range all {
		if isCRD(u) && !deleteCRDs {
			continue
		}
		if err := e.delete(ctx, u); err != nil {
			errs = append(errs, fmt.Sprintf("deleting %s: %v", k, err))
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return errors.New(strings.Join(errs, "; "))
	}
	for _, r := range hist {
		if _, err := e.Storage.Delete(r.Name, r.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return fmt.Errorf("deleting revision %d of release %q: %w", r.Version, name, err)
		}
	}
	return nil
}

// history is every stored revision of name, oldest first.
func (e *Engine) history(name string) ([]*release.Release, error) {
	hist, err := e.Storage.History(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("reading the revisions of release %q: %w", name, err)
	}
	sortByVersion(hist)
	return hist, nil
}

// defaultNamespaces puts namespaced objects without a namespace into ns. Kinds defined by a CRD of
// the same bundle take their scope from it; others from the API server.
func (e *Engine) defaultNamespaces(objs []*unstructured.Unstructured, ns string) error {
	bundled := map[schema.GroupKind]bool{}
	for _, u := range objs {
		if isCRD(u) {
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			bundled[schema.GroupKind{Group: group, Kind: kind}] = scope == string(apiextensionsv1.NamespaceScoped)
		}
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		namespaced, ok := bundled[gvk.GroupKind()]
		if !ok {
			m, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("the bundle contains %s, a kind the API server does not serve (%v): install the CRD that defines %s first or remove the object", KeyOf(u), err, gvk.GroupVersion())
			}
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
		switch {
		case namespaced && u.GetNamespace() == "":
			u.SetNamespace(ns)
		case !namespaced && u.GetNamespace() != "":
			u.SetNamespace("")
		}
	}
	return nil
}

// applyAll server-side applies objs in order, waiting for CRDs to be Established before the first
// object that is not a CRD.
func (e *Engine) applyAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	var crds []string
	waited := false
	for _, u := range objs {
		if !isCRD(u) && !waited && len(crds) > 0 {
			if err := e.waitEstablished(ctx, crds); err != nil {
				return err
			}
			waited = true
		}
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", KeyOf(u), err)
		}
		if isCRD(u) {
			crds = append(crds, u.GetName())
		}
	}
	if !waited && len(crds) > 0 {
		return e.waitEstablished(ctx, crds)
	}
	return nil
}

func (e *Engine) waitEstablished(ctx context.Context, names []string) error {
	timeout := e.CRDEstablishTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	var pending string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				pending = n + ": " + err.Error()
				return false, nil
			}
			if !CRDEstablished(crd) {
				pending = n
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("CustomResourceDefinition %s is not Established after %s (check its conditions with kubectl describe crd): %w", pending, timeout, err)
	}
	// New kinds are served now: let the RESTMapper learn them.
	return nil
}

// CRDEstablished reports whether crd has condition Established=True.
func CRDEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// prune deletes what the previous revision applied and objs no longer contain (never CRDs).
func (e *Engine) prune(ctx context.Context, prev *release.Release, objs []*unstructured.Unstructured) error {
	old, err := decodeManifest(prev.Manifest)
	if err != nil {
		return err
	}
	keep := map[ObjectKey]bool{}
	for _, u := range objs {
		keep[KeyOf(u)] = true
	}
	for _, u := range old {
		if keep[KeyOf(u)] || isCRD(u) {
			continue
		}
		if err := e.delete(ctx, u); err != nil {
			return fmt.Errorf("pruning %s, which revision %d no longer contains: %w", KeyOf(u), prev.Version+1, err)
		}
	}
	return nil
}

// rollback re-applies the deployed revision and deletes what the failed one added.
func (e *Engine) rollback(ctx context.Context, deployed *release.Release, failed []*unstructured.Unstructured) error {
	old, err := decodeManifest(deployed.Manifest)
	if err != nil {
		return err
	}
	keep := map[ObjectKey]bool{}
	for _, u := range old {
		keep[KeyOf(u)] = true
	}
	var errs []string
	for _, u := range failed {
		if !keep[KeyOf(u)] && !isCRD(u) {
			if err := e.delete(ctx, u); err != nil {
				errs = append(errs, fmt.Sprintf("deleting %s: %v", KeyOf(u), err))
			}
		}
	}
	if err := e.applyAll(ctx, old); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (e *Engine) delete(ctx context.Context, u *unstructured.Unstructured) error {
	err := e.Client.Delete(ctx, u.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return err
}

func isCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == apiextensionsv1.GroupName && gvk.Kind == "CustomResourceDefinition"
}
