package migrate

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What differs between a running pod template and the one OLM v1 renders.

// deploymentDiff lists the differences between the live and the rendered pod templates that a
// server-side apply would write (and so roll out new pods): template labels and annotations, and
// per container the image, command, args and environment. Fields the API server defaults are not
// compared.
func deploymentDiff(liveU, renderedU *unstructured.Unstructured) []string {
	var live, rendered appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(liveU.Object, &live); err != nil {
		return []string{fmt.Sprintf("Deployment %s: %v", nsName(liveU), err)}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(renderedU.Object, &rendered); err != nil {
		return []string{fmt.Sprintf("Deployment %s: %v", nsName(renderedU), err)}
	}
	return TemplateDiff("Deployment "+nsName(liveU), &live.Spec.Template, &rendered.Spec.Template)
}

// TemplateDiff compares two pod templates on what OLM writes into them (pure).
func TemplateDiff(what string, live, rendered *corev1.PodTemplateSpec) []string {
	var out []string
	diffMap := func(field string, l, r map[string]string) {
		for _, k := range sortedKeys(l, r) {
			lv, lok := l[k]
			rv, rok := r[k]
			switch {
			case lok && !rok:
				out = append(out, fmt.Sprintf("%s: pod template %s %s=%q is running but OLM v1 does not render it", what, field, k, lv))
			case !lok && rok:
				out = append(out, fmt.Sprintf("%s: pod template %s %s=%q would be added by OLM v1", what, field, k, rv))
			case lv != rv:
				out = append(out, fmt.Sprintf("%s: pod template %s %s is %q, OLM v1 renders %q", what, field, k, lv, rv))
			}
		}
	}
	diffMap("annotation", live.Annotations, rendered.Annotations)
	diffMap("label", live.Labels, rendered.Labels)
	if live.Spec.ServiceAccountName != rendered.Spec.ServiceAccountName {
		out = append(out, fmt.Sprintf("%s: serviceAccountName is %q, OLM v1 renders %q", what, live.Spec.ServiceAccountName, rendered.Spec.ServiceAccountName))
	}
	lc := map[string]corev1.Container{}
	for _, c := range append(append([]corev1.Container(nil), live.Spec.InitContainers...), live.Spec.Containers...) {
		lc[c.Name] = c
	}
	for _, r := range append(append([]corev1.Container(nil), rendered.Spec.InitContainers...), rendered.Spec.Containers...) {
		l, ok := lc[r.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: container %s would be added by OLM v1", what, r.Name))
			continue
		}
		delete(lc, r.Name)
		cw := fmt.Sprintf("%s: container %s", what, r.Name)
		if l.Image != r.Image {
			out = append(out, fmt.Sprintf("%s: image is %q, OLM v1 renders %q", cw, l.Image, r.Image))
		}
		if !reflect.DeepEqual(nilIfEmpty(l.Command), nilIfEmpty(r.Command)) || !reflect.DeepEqual(nilIfEmpty(l.Args), nilIfEmpty(r.Args)) {
			out = append(out, fmt.Sprintf("%s: command or args differ (%q %q, OLM v1 renders %q %q)", cw, l.Command, l.Args, r.Command, r.Args))
		}
		if le, re := envString(l.Env), envString(r.Env); le != re {
			out = append(out, fmt.Sprintf("%s: env is [%s], OLM v1 renders [%s]", cw, le, re))
		}
	}
	for name := range lc {
		out = append(out, fmt.Sprintf("%s: container %s is running but OLM v1 does not render it", what, name))
	}
	sort.Strings(out)
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// envString writes env in order (its order is part of the pod template).
func envString(env []corev1.EnvVar) string {
	parts := make([]string, 0, len(env))
	for _, e := range env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			parts = append(parts, e.Name+"=<field "+e.ValueFrom.FieldRef.FieldPath+">")
		case e.ValueFrom != nil:
			parts = append(parts, e.Name+"=<valueFrom>")
		default:
			parts = append(parts, e.Name+"="+e.Value)
		}
	}
	return strings.Join(parts, " ")
}

func sortedKeys(ms ...map[string]string) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
