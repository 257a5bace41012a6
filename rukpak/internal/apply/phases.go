package apply

// Phases: a bundle's objects grouped in the order a cluster needs them — namespaces, policies,
// RBAC, CRDs, storage, workloads, webhooks, then everything else (custom resources) — so that a
// phase can wait until its objects pass the BundleDeployment's progression probes before the next
// one is applied (a webhook configuration only once the webhook's Deployment is ready, a custom
// resource only once its operator is). PhaseOf and SplitPhases are pure; PhaseGate reads the live
// objects of one phase and runs the probes that select them; applyPhases applies phase after phase
// through applyAll and stops at the first phase that waits, returning a *PhaseWaitError. Without
// probes (a nil gate) nothing changes: the objects are applied in the engine's order in one go.
//
// Within a phase the objects keep the order they are given in (the engine's apply order), and
// splitting never changes what a revision records: the manifest and its digest stay as they are.

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/rukpak/internal/health"
)

// Phase is one step of a phased apply; phases are applied in increasing order.
type Phase int

// The phases, in apply order.
const (
	PhaseNamespaces Phase = iota
	PhasePolicies
	PhaseRBAC
	PhaseCRDs
	PhaseStorage
	PhaseWorkloads
	PhaseWebhooks
	PhaseOther
)

var phaseNames = [...]string{"namespaces", "policies", "rbac", "crds", "storage", "workloads", "webhooks", "other"}

func (p Phase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}

// phaseKinds are the built-in kinds of every phase but PhaseOther.
var phaseKinds = map[schema.GroupKind]Phase{
	{Group: "", Kind: "Namespace"}: PhaseNamespaces,

	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                               PhasePolicies,
	{Group: "", Kind: "ResourceQuota"}:                                                PhasePolicies,
	{Group: "", Kind: "LimitRange"}:                                                   PhasePolicies,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               PhasePolicies,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      PhasePolicies,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        PhasePolicies,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: PhasePolicies,

	{Group: "", Kind: "ServiceAccount"}:                                             PhaseRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:                              PhaseRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                       PhaseRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:                       PhaseRBAC,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                PhaseRBAC,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:               PhaseCRDs,
	{Group: "", Kind: "PersistentVolumeClaim"}:                                      PhaseStorage,
	{Group: "", Kind: "PersistentVolume"}:                                           PhaseStorage,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 PhaseStorage,
	{Group: "", Kind: "ConfigMap"}:                                                  PhaseStorage,
	{Group: "", Kind: "Secret"}:                                                     PhaseStorage,
	{Group: "apps", Kind: "Deployment"}:                                             PhaseWorkloads,
	{Group: "apps", Kind: "StatefulSet"}:                                            PhaseWorkloads,
	{Group: "apps", Kind: "DaemonSet"}:                                              PhaseWorkloads,
	{Group: "apps", Kind: "ReplicaSet"}:                                             PhaseWorkloads,
	{Group: "batch", Kind: "Job"}:                                                   PhaseWorkloads,
	{Group: "batch", Kind: "CronJob"}:                                               PhaseWorkloads,
	{Group: "", Kind: "Pod"}:                                                        PhaseWorkloads,
	{Group: "", Kind: "ReplicationController"}:                                      PhaseWorkloads,
	{Group: "", Kind: "Service"}:                                                    PhaseWorkloads,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                                   PhaseWorkloads,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                  PhaseWorkloads,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:                         PhaseWorkloads,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: PhaseWebhooks,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   PhaseWebhooks,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                           PhaseWebhooks,
}

// PhaseOf is the phase of objects of kind gvk: every kind not named above (custom resources above
// all) is PhaseOther.
func PhaseOf(gvk schema.GroupVersionKind) Phase {
	if p, ok := phaseKinds[gvk.GroupKind()]; ok {
		return p
	}
	return PhaseOther
}

// PhaseObjects are the objects of one phase.
type PhaseObjects struct {
	Phase   Phase
	Objects []*unstructured.Unstructured
}

// SplitPhases groups objs by phase, phases in apply order and only those with objects, each
// phase's objects in the order of objs.
func SplitPhases(objs []*unstructured.Unstructured) []PhaseObjects {
	var byPhase [len(phaseNames)][]*unstructured.Unstructured
	for _, u := range objs {
		p := PhaseOf(u.GroupVersionKind())
		byPhase[p] = append(byPhase[p], u)
	}
	var out []PhaseObjects
	for p, list := range byPhase {
		if len(list) > 0 {
			out = append(out, PhaseObjects{Phase: Phase(p), Objects: list})
		}
	}
	return out
}

// PhaseGate decides whether a phased apply may go on past a phase: every object of the phase that
// one of Probes selects must pass it, read live through Reader. Phases whose objects no probe
// selects never wait.
type PhaseGate struct {
	Probes []*health.Probe
	Reader client.Reader
}

// PhaseWaitError says that a phase's objects do not pass their probes yet, so the phases after it
// were not applied.
type PhaseWaitError struct {
	// Phase is the phase that waits.
	Phase Phase
	// Next is the first phase not applied.
	Next Phase
	// Probe is what waits: the probe, the object and the failing assertion.
	Probe *health.ProbeError
	// Applied are the objects of the phases that were applied, in apply order.
	Applied []*unstructured.Unstructured
}

func (e *PhaseWaitError) Error() string {
	return fmt.Sprintf("%v (phase %s; phase %s and later are applied once it passes)", e.Probe, e.Phase, e.Next)
}

// Unwrap makes health.IsProbeWaiting see the probe.
func (e *PhaseWaitError) Unwrap() error { return e.Probe }

// Check runs the gate's probes on the live objects of objs (one phase, as applied): nil when all
// that a probe selects pass, else the first *health.ProbeError.
func (g *PhaseGate) Check(ctx context.Context, objs []*unstructured.Unstructured) error {
	if g == nil || len(g.Probes) == 0 {
		return nil
	}
	for _, u := range objs {
		var probes []*health.Probe
		for _, p := range g.Probes {
			if p.Matches(u) {
				probes = append(probes, p)
			}
		}
		if len(probes) == 0 {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		object := u.GetKind() + " " + objectName(u)
		if err := g.Reader.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil {
			if apierrors.IsNotFound(err) {
				return &health.ProbeError{Probe: probes[0].Name, Object: object, Why: "not found"}
			}
			return fmt.Errorf("reading %s for progression probe %q: %w", object, probes[0].Name, err)
		}
		for _, p := range probes {
			if ok, why := p.Evaluate(live); !ok {
				return &health.ProbeError{Probe: p.Name, Object: object, Why: why}
			}
		}
	}
	return nil
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetName()
}

// applyPhases applies objs phase by phase through applyAll and, after each phase but the last,
// asks gate whether to go on; when a phase waits it returns a *PhaseWaitError carrying what was
// applied, and the phases after it are not applied. A nil gate (a BundleDeployment without
// progression probes) applies objs as given, in one applyAll: the order rukpak has always used.
func (e *Engine) applyPhases(ctx context.Context, req Request, objs []*unstructured.Unstructured,
	existing map[ObjectKey]*unstructured.Unstructured, gate *PhaseGate) error {
	if gate == nil || len(gate.Probes) == 0 {
		return e.applyAll(ctx, req, objs, existing)
	}
	phases := SplitPhases(objs)
	var applied []*unstructured.Unstructured
	for i, ph := range phases {
		if err := e.applyAll(ctx, req, ph.Objects, existing); err != nil {
			return err
		}
		applied = append(applied, ph.Objects...)
		if i == len(phases)-1 {
			break
		}
		if err := gate.Check(ctx, ph.Objects); err != nil {
			var pe *health.ProbeError
			if !errors.As(err, &pe) {
				return err
			}
			return &PhaseWaitError{Phase: ph.Phase, Next: phases[i+1].Phase, Probe: pe, Applied: applied}
		}
	}
	return nil
}
