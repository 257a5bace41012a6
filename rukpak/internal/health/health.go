// Package health decides whether the objects a BundleDeployment applied are ready: Deployments
// Available (and rolled out), StatefulSets and DaemonSets with every replica ready and updated, CRDs
// Established, Jobs Complete (a Failed Job is unhealthy, with its reason), PersistentVolumeClaims
// Bound, APIServices Available, and the Services that its webhooks call with a ready endpoint. Other
// kinds are healthy once they exist. The message of an unready Deployment, StatefulSet or DaemonSet
// carries the workload's own failure when its conditions report one (ReplicaFailure,
// ProgressDeadlineExceeded) and what its pods say (see PodProblem), so that a person sees why pods
// are missing or not ready. Progression probes (probes.go) add checks of the bundle's own choosing
// for the objects they select, e.g. a custom resource's .status.phase.
package health

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Check reads each object in objs (as the engine applied them) through reader and returns nil when
// all are healthy, else an error naming the first one that is not and why. When endpoints is not nil,
// the Services that the bundle's webhooks (admission and CRD conversion) call must also have a ready
// endpoint, and the pods of a workload that is not ready are read to say why (a scheduling failure,
// an image pull error, CrashLoopBackOff with the container's last message); endpoints must read
// EndpointSlices and Pods, which rukpak does not label, so it is not the label-scoped cache.
func Check(ctx context.Context, reader, endpoints client.Reader, objs []*unstructured.Unstructured) error {
	return NewPlan(objs).Check(ctx, reader, endpoints)
}

// Plan is what Check looks at for one set of applied objects: the objects whose status decides health
// (as references) and the webhook Services. It is small enough to keep per BundleDeployment between
// reconciles, unlike the objects themselves (CRDs can be large).
type Plan struct {
	Objects  []ObjectRef
	Services []ServiceRef
	// Probed are the objects that progression probes select, in apply order, each with those probes.
	Probed []ProbedObject
}

// ProbedObject is an applied object and the progression probes that select it.
type ProbedObject struct {
	ObjectRef
	Probes []*Probe
}

// ObjectRef names one applied object whose status decides health.
type ObjectRef struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// NewPlan extracts the Plan of objs.
func NewPlan(objs []*unstructured.Unstructured) Plan {
	return NewProbedPlan(objs, nil)
}

// NewProbedPlan extracts the Plan of objs where, besides the built-in rules, every object that one
// of probes selects must pass it.
func NewProbedPlan(objs []*unstructured.Unstructured, probes []*Probe) Plan {
	var p Plan
	for _, u := range objs {
		ref := ObjectRef{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if watched(u) {
			p.Objects = append(p.Objects, ref)
		}
		var matched []*Probe
		for _, pr := range probes {
			if pr.Matches(u) {
				matched = append(matched, pr)
			}
		}
		if len(matched) > 0 {
			p.Probed = append(p.Probed, ProbedObject{ObjectRef: ref, Probes: matched})
		}
	}
	p.Services = WebhookServices(objs)
	return p
}

// ProbedKinds are the kinds of the objects that probes select: a change of their status can change
// Healthy, like that of StatusKinds.
func (p Plan) ProbedKinds() []schema.GroupKind {
	var out []schema.GroupKind
	seen := map[schema.GroupKind]bool{}
	for _, o := range p.Probed {
		if gk := o.GVK.GroupKind(); !seen[gk] {
			seen[gk] = true
			out = append(out, gk)
		}
	}
	return out
}

// Check is Check for the objects the plan was made of.
func (p Plan) Check(ctx context.Context, reader, endpoints client.Reader) error {
	if err := checkObjects(ctx, reader, endpoints, p.Objects); err != nil {
		return err
	}
	if err := checkProbed(ctx, reader, p.Probed); err != nil {
		return err
	}
	if endpoints == nil {
		return nil
	}
	for _, svc := range p.Services {
		if err := checkEndpoints(ctx, endpoints, svc); err != nil {
			return err
		}
	}
	return nil
}

// checkObjects checks each object; the pods of a workload that is not ready are read with pods (when
// not nil) to say why.
func checkObjects(ctx context.Context, reader, pods client.Reader, refs []ObjectRef) error {
	for _, ref := range refs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(ref.GVK)
		if err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, live); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s not found", ref.GVK.Kind, ref.name())
			}
			return fmt.Errorf("reading %s %s: %w", ref.GVK.Kind, ref.name(), err)
		}
		if ok, why := Evaluate(live); !ok {
			switch live.GetKind() {
			case "Deployment", "StatefulSet", "DaemonSet":
				why = withPodProblems(ctx, pods, live, why)
			}
			return fmt.Errorf("%s %s is not ready: %s", live.GetKind(), name(live), why)
		}
	}
	return nil
}

// checkProbed reads each probed object and runs its probes; the first that fails is a *ProbeError.
func checkProbed(ctx context.Context, reader client.Reader, probed []ProbedObject) error {
	for _, o := range probed {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GVK)
		if err := reader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, live); err != nil {
			if apierrors.IsNotFound(err) {
				return &ProbeError{Probe: o.Probes[0].Name, Object: o.GVK.Kind + " " + o.name(), Why: "not found"}
			}
			return fmt.Errorf("reading %s %s: %w", o.GVK.Kind, o.name(), err)
		}
		for _, pr := range o.Probes {
			if ok, why := pr.Evaluate(live); !ok {
				return &ProbeError{Probe: pr.Name, Object: o.GVK.Kind + " " + o.name(), Why: why}
			}
		}
	}
	return nil
}

func (r ObjectRef) name() string {
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}

// watched reports whether u is of a kind whose status decides health.
func watched(u *unstructured.Unstructured) bool {
	return StatusKinds[u.GroupVersionKind().GroupKind()]
}

// StatusKinds are the kinds whose status Evaluate looks at: a change of their status can change
// Healthy (the controller's watches pass those status updates on).
var StatusKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:                               true,
	{Group: "apps", Kind: "StatefulSet"}:                              true,
	{Group: "apps", Kind: "DaemonSet"}:                                true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true,
	{Group: "batch", Kind: "Job"}:                                     true,
	{Group: "", Kind: "PersistentVolumeClaim"}:                        true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             true,
}

func name(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetName()
}

// Evaluate is the pure health rule for one live object: ok, or why not.
func Evaluate(u *unstructured.Unstructured) (bool, string) {
	gen := u.GetGeneration()
	observed, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	kind := u.GetKind()
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		if !found || observed < gen {
			return false, fmt.Sprintf("the controller has not observed generation %d yet", gen)
		}
	}
	switch kind {
	case "Deployment":
		cond, msg := condition(u, "Available")
		if cond != "True" {
			if msg == "" {
				msg = "condition Available is not True"
			}
			return false, withWorkloadFailures(u, "not Available: "+msg)
		}
		return evaluateDeploymentRollout(u)
	case "StatefulSet":
		return evaluateStatefulSet(u)
	case "DaemonSet":
		return evaluateDaemonSet(u)
	case "CustomResourceDefinition":
		cond, msg := condition(u, "Established")
		if cond != "True" {
			return false, "not Established: " + msg
		}
		return true, ""
	case "Job":
		return evaluateJob(u)
	case "PersistentVolumeClaim":
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if phase != "Bound" {
			if phase == "" {
				phase = "Pending"
			}
			return false, fmt.Sprintf("phase %s, not Bound (check its storage class and events; a WaitForFirstConsumer volume binds once a pod uses it)", phase)
		}
		return true, ""
	case "APIService":
		cond, msg := condition(u, "Available")
		if cond != "True" {
			if msg == "" {
				msg = "condition Available is not True"
			}
			return false, "not Available: " + msg
		}
		return true, ""
	}
	return true, ""
}

// withWorkloadFailures appends to why what the workload's own conditions say went wrong: a
// ReplicaFailure condition that is True (its controller could not create pods, e.g. `pods "x-1" is
// forbidden: no PriorityClass with name y was found`; the Deployment controller copies it from the
// ReplicaSet) and a Progressing condition that is False with reason ProgressDeadlineExceeded (the
// rollout made no progress within spec.progressDeadlineSeconds). Both are Deployment conditions;
// StatefulSets and DaemonSets are looked at the same way in case their controller sets them.
func withWorkloadFailures(u *unstructured.Unstructured, why string) string {
	var parts []string
	if c := findCondition(u, "ReplicaFailure"); c != nil && c.status == "True" {
		parts = append(parts, c.describe("ReplicaFailure"))
	}
	if c := findCondition(u, "Progressing"); c != nil && c.status == "False" && c.reason == "ProgressDeadlineExceeded" {
		parts = append(parts, c.describe("Progressing=False"))
	}
	for _, p := range parts {
		why += "; " + p
	}
	return why
}

type conditionFields struct{ status, reason, message, lastUpdateTime string }

// describe renders the condition as `label (reason): message`, leaving out what is empty.
func (c *conditionFields) describe(label string) string {
	s := label
	if c.reason != "" {
		s += " (" + c.reason + ")"
	}
	if c.message != "" {
		s += ": " + c.message
	}
	return s
}

func findCondition(u *unstructured.Unstructured, typ string) *conditionFields {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != typ {
			continue
		}
		out := &conditionFields{}
		out.status, _ = m["status"].(string)
		out.reason, _ = m["reason"].(string)
		out.message, _ = m["message"].(string)
		out.lastUpdateTime, _ = m["lastUpdateTime"].(string)
		return out
	}
	return nil
}

// evaluateJob: a Job is healthy once Complete; Failed is unhealthy with the Job's reason and message;
// otherwise it is still running.
func evaluateJob(u *unstructured.Unstructured) (bool, string) {
	if cond, _ := condition(u, "Complete"); cond == "True" {
		return true, ""
	}
	if cond, msg := condition(u, "Failed"); cond == "True" {
		reason := conditionReason(u, "Failed")
		switch {
		case reason != "" && msg != "":
			return false, fmt.Sprintf("failed (%s): %s", reason, msg)
		case reason != "":
			return false, fmt.Sprintf("failed (%s)", reason)
		case msg != "":
			return false, "failed: " + msg
		}
		return false, "failed"
	}
	active, _, _ := unstructured.NestedInt64(u.Object, "status", "active")
	succeeded, _, _ := unstructured.NestedInt64(u.Object, "status", "succeeded")
	failed, _, _ := unstructured.NestedInt64(u.Object, "status", "failed")
	return false, fmt.Sprintf("not complete yet: %d active, %d succeeded, %d failed pods", active, succeeded, failed)
}

func conditionReason(u *unstructured.Unstructured, typ string) string {
	if c := findCondition(u, typ); c != nil {
		return c.reason
	}
	return ""
}

func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	if c := findCondition(u, typ); c != nil {
		return c.status, c.message
	}
	return "", ""
}

// ServiceRef names a Service a webhook calls.
type ServiceRef struct{ Namespace, Name, Caller string }

// WebhookServices lists, in order and without repeats, the Services called by the admission webhooks
// and CRD conversion webhooks among objs.
func WebhookServices(objs []*unstructured.Unstructured) []ServiceRef {
	var out []ServiceRef
	seen := map[ServiceRef]bool{}
	add := func(clientConfig map[string]interface{}, caller string) {
		ns, _, _ := unstructured.NestedString(clientConfig, "service", "namespace")
		name, _, _ := unstructured.NestedString(clientConfig, "service", "name")
		if name == "" {
			return
		}
		ref := ServiceRef{Namespace: ns, Name: name}
		if !seen[ref] {
			seen[ref] = true
			ref.Caller = caller
			out = append(out, ref)
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				if m, ok := h.(map[string]interface{}); ok {
					cc, _, _ := unstructured.NestedMap(m, "clientConfig")
					add(cc, u.GetKind()+" "+u.GetName())
				}
			}
		case "CustomResourceDefinition":
			cc, _, _ := unstructured.NestedMap(u.Object, "spec", "conversion", "webhook", "clientConfig")
			add(cc, "the conversion webhook of CustomResourceDefinition "+u.GetName())
		}
	}
	return out
}

func checkEndpoints(ctx context.Context, reader client.Reader, svc ServiceRef) error {
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return fmt.Errorf("listing the endpoints of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return nil
			}
		}
	}
	return fmt.Errorf("Service %s/%s, called by %s, has no ready endpoint (check that its selector matches the pods of a ready Deployment)",
		svc.Namespace, svc.Name, svc.Caller)
}
