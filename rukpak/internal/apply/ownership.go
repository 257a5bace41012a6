package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Ownership: an object belongs to the BundleDeployment named by its OwnerKindLabel and
// OwnerNameLabel. Before rukpak changes an existing object it reads it from the API server and
// decides, by the request's collision policy, whether it may (mayTake); before it deletes or orphans
// one it reads it again and only touches it if it is still its own, with delete preconditions on
// UID and resourceVersion so that a concurrent change wins.

// writeRetries bounds how often a write that lost a race (409 Conflict on a precondition) is retried
// after reading the object again.
const writeRetries = 5

// ReleasedFromAnnotation marks a CustomResourceDefinition that rukpak kept when it uninstalled the
// BundleDeployment named by the value (CRDs are kept by default: deleting one deletes users' custom
// resources). Its owner labels are removed, so it is not tied to a BundleDeployment that is gone,
// and any BundleDeployment whose bundle has it may take it back: OLM created it.
const ReleasedFromAnnotation = "core.rukpak.io/released-from"

// ownership says who owns an existing object.
type ownership struct {
	// self is true when the object carries this BundleDeployment's owner labels.
	self bool
	// released names the BundleDeployment whose uninstall kept this CRD (ReleasedFromAnnotation).
	released string
	// bundleDeployment is the name of another BundleDeployment that owns it.
	bundleDeployment string
	// controller is the object's controller ownerReference, if any.
	controller *metav1.OwnerReference
}

func ownershipOf(u *unstructured.Unstructured, self string) ownership {
	labels := u.GetLabels()
	o := ownership{controller: metav1.GetControllerOfNoCopy(u)}
	if labels[OwnerKindLabel] == OwnerKind {
		if labels[OwnerNameLabel] == self {
			o.self = true
		} else {
			o.bundleDeployment = labels[OwnerNameLabel]
		}
	} else if isCRD(u) {
		o.released = u.GetAnnotations()[ReleasedFromAnnotation]
	}
	return o
}

// String describes the current owner for a message.
func (o ownership) String() string {
	switch {
	case o.bundleDeployment != "":
		return fmt.Sprintf("BundleDeployment %q", o.bundleDeployment)
	case o.released != "" && o.controller == nil:
		return fmt.Sprintf("nobody: kept when BundleDeployment %q was uninstalled", o.released)
	case o.controller != nil:
		return fmt.Sprintf("%s %q (its controller; not managed by OLM)", o.controller.Kind, o.controller.Name)
	}
	return "nobody: it is not managed by OLM"
}

// mayTake reports whether policy lets a BundleDeployment change an existing object owned as o.
func mayTake(policy rukpakv1alpha1.CollisionPolicy, o ownership) bool {
	switch {
	case o.self, policy == rukpakv1alpha1.CollisionPolicyNone:
		return true
	case o.released != "" && o.controller == nil:
		return true // a CRD OLM created and kept on uninstall: any bundle that has it takes it back
	case policy == rukpakv1alpha1.CollisionPolicyIfNoController:
		return o.bundleDeployment == "" && o.controller == nil
	}
	return false
}

// Collision is one existing object a BundleDeployment may not take.
type Collision struct {
	Object ObjectKey
	// Owner describes the current owner ("BundleDeployment \"x\"", "nobody: it is not managed by OLM" ...).
	Owner string
	// OtherBundleDeployment is set when another BundleDeployment owns the object.
	OtherBundleDeployment string
}

// ConflictError reports the objects a BundleDeployment did not touch because its collision policy
// does not let it take them.
type ConflictError struct {
	BundleDeployment string
	Policy           rukpakv1alpha1.CollisionPolicy
	Collisions       []Collision
}

func (e *ConflictError) Error() string {
	c := e.Collisions[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%s already exists and is owned by %s, not by BundleDeployment %q; it was left untouched (collisionPolicy %s)",
		c.Object, c.Owner, e.BundleDeployment, e.Policy)
	if n := len(e.Collisions) - 1; n > 0 {
		var more []string
		for i, o := range e.Collisions[1:] {
			if i == 3 {
				more = append(more, "...")
				break
			}
			more = append(more, o.Object.String())
		}
		fmt.Fprintf(&b, "; %d more object(s) collide too: %s", n, strings.Join(more, ", "))
	}
	switch {
	case c.OtherBundleDeployment != "":
		fmt.Fprintf(&b, ". Two BundleDeployments cannot own one object: remove it from one of the bundles, or delete BundleDeployment %q first", c.OtherBundleDeployment)
	case e.Policy == rukpakv1alpha1.CollisionPolicyIfNoController:
		b.WriteString(". It has a controller: delete it, or set spec.collisionPolicy to None to take it over (dangerous: deleting the BundleDeployment then deletes it)")
	default:
		b.WriteString(". Delete or rename the existing object, or set spec.collisionPolicy to IfNoController to adopt it")
	}
	return b.String()
}

// policyOrDefault is policy, or Prevent when empty.
func policyOrDefault(policy rukpakv1alpha1.CollisionPolicy) rukpakv1alpha1.CollisionPolicy {
	if policy == "" {
		return rukpakv1alpha1.CollisionPolicyPrevent
	}
	return policy
}

// observe reads the live object u names; nil when it does not exist (or its kind is not served yet,
// e.g. a custom resource whose CRD the same bundle installs).
func (e *Engine) observe(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	err := e.Client.Get(ctx, client.ObjectKeyFromObject(u), live)
	switch {
	case err == nil:
		return live, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	}
	return nil, fmt.Errorf("reading %s to check who owns it: %w", KeyOf(u), err)
}

// claim reads every object of objs and returns those that exist, by key, or a *ConflictError
// naming every existing object that policy does not let BundleDeployment self take.
func (e *Engine) claim(ctx context.Context, self string, policy rukpakv1alpha1.CollisionPolicy, objs []*unstructured.Unstructured) (map[ObjectKey]*unstructured.Unstructured, error) {
	policy = policyOrDefault(policy)
	existing := map[ObjectKey]*unstructured.Unstructured{}
	conflict := &ConflictError{BundleDeployment: self, Policy: policy}
	for _, u := range objs {
		live, err := e.observe(ctx, u)
		if err != nil {
			return nil, err
		}
		if live == nil {
			continue
		}
		if o := ownershipOf(live, self); !mayTake(policy, o) {
			conflict.Collisions = append(conflict.Collisions, Collision{Object: KeyOf(u), Owner: o.String(), OtherBundleDeployment: o.bundleDeployment})
			continue
		}
		existing[KeyOf(u)] = live
	}
	if len(conflict.Collisions) > 0 {
		return nil, conflict
	}
	return existing, nil
}

// applyOne server-side applies u for BundleDeployment self. live is the object as last read (nil
// when it did not exist). An object this BundleDeployment owns is applied with its UID as a
// precondition (a deleted and re-created object is not taken by mistake); one it adopts also with
// its resourceVersion, so that the object taken is exactly the one the policy was checked against.
// When a precondition fails the object is read again and the policy decided again.
func (e *Engine) applyOne(ctx context.Context, self string, policy rukpakv1alpha1.CollisionPolicy, u, live *unstructured.Unstructured) error {
	policy = policyOrDefault(policy)
	for attempt := 1; ; attempt++ {
		obj := u.DeepCopy()
		if live != nil {
			o := ownershipOf(live, self)
			if !mayTake(policy, o) {
				return &ConflictError{BundleDeployment: self, Policy: policy,
					Collisions: []Collision{{Object: KeyOf(u), Owner: o.String(), OtherBundleDeployment: o.bundleDeployment}}}
			}
			obj.SetUID(live.GetUID())
			if !o.self {
				obj.SetResourceVersion(live.GetResourceVersion())
			}
		}
		err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldOwner), client.ForceOwnership)
		if err == nil {
			// obj is the API server's answer now: an existing object this apply changed is
			// remembered, so that its watch event is not taken for drift (a creation's is not).
			if live != nil && obj.GetResourceVersion() != live.GetResourceVersion() {
				e.own.record(KeyOf(u), obj.GetResourceVersion())
			}
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == writeRetries {
			return fmt.Errorf("applying %s: %w", KeyOf(u), err)
		}
		if live, err = e.observe(ctx, u); err != nil {
			return err
		}
	}
}

// deleteOwned deletes the object u names if BundleDeployment self owns it at that moment, with
// preconditions on its UID and resourceVersion. It reports whether the object was left alone
// because someone else owns it now.
func (e *Engine) deleteOwned(ctx context.Context, self string, u *unstructured.Unstructured) (leftAlone bool, err error) {
	for attempt := 1; ; attempt++ {
		live, err := e.observe(ctx, u)
		if err != nil || live == nil {
			return false, err
		}
		if !ownershipOf(live, self).self {
			return true, nil
		}
		uid, rv := live.GetUID(), live.GetResourceVersion()
		err = e.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			return false, nil
		case !apierrors.IsConflict(err) || attempt == writeRetries:
			return false, fmt.Errorf("deleting %s: %w", KeyOf(u), err)
		}
	}
}

// orphanOwned removes BundleDeployment self's owner labels from the object u names, if it owns it,
// leaving the object in place.
func (e *Engine) orphanOwned(ctx context.Context, self string, u *unstructured.Unstructured) error {
	return e.dropOwnership(ctx, self, u, "", "removing the ownership labels of")
}

// releaseCRD keeps the CRD u names when BundleDeployment self is uninstalled: if self still owns it,
// its owner labels are replaced by ReleasedFromAnnotation, so that a later BundleDeployment with the
// same CRD takes it back instead of reporting a conflict with a BundleDeployment that no longer exists.
func (e *Engine) releaseCRD(ctx context.Context, self string, u *unstructured.Unstructured) error {
	return e.dropOwnership(ctx, self, u, ReleasedFromAnnotation, "releasing the kept CRD")
}

// dropOwnership removes self's owner labels from the object u names if self still owns it, with its
// resourceVersion as a precondition (a concurrent change is read again and decided again), and
// sets annotation (when not empty) to self. what starts the error message.
func (e *Engine) dropOwnership(ctx context.Context, self string, u *unstructured.Unstructured, annotation, what string) error {
	for attempt := 1; ; attempt++ {
		live, err := e.observe(ctx, u)
		if err != nil || live == nil || !ownershipOf(live, self).self {
			return err
		}
		meta := map[string]any{
			"resourceVersion": live.GetResourceVersion(),
			"labels":          map[string]any{OwnerKindLabel: nil, OwnerNameLabel: nil},
		}
		if annotation != "" {
			meta["annotations"] = map[string]any{annotation: self}
		}
		patch, err := json.Marshal(map[string]any{"metadata": meta})
		if err != nil {
			return err
		}
		err = e.Client.Patch(ctx, live, client.RawPatch(types.MergePatchType, patch))
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || attempt == writeRetries:
			return fmt.Errorf("%s %s: %w", what, KeyOf(u), err)
		}
	}
}
