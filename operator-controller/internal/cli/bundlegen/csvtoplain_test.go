package bundlegen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// plainNamespace is the namespace the plain manifests of a real bundle are written for.
const plainNamespace = "operators"

// csvToPlain writes the plain manifests a bundle's CSV stands for into out: a Deployment per
// install strategy deployment, ServiceAccounts, a Role/ClusterRole and binding per permissions
// entry, a Service and webhook configuration per webhook definition (conversion webhooks set on
// their CRDs), the alm-examples as custom resources, and the bundle's other manifests as they are.
// It returns the generate options and the watched namespaces of the install mode to render with.
func csvToPlain(dir, out string) (Options, []string, error) {
	objs, err := Load(filepath.Join(dir, "manifests"))
	if err != nil {
		return Options{}, nil, err
	}
	var csvObj *unstructured.Unstructured
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.gk() == csvKind {
			csvObj = o.Obj
		} else {
			rest = append(rest, o.Obj)
		}
	}
	if csvObj == nil {
		return Options{}, nil, fmt.Errorf("no CSV")
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	data, _ := json.Marshal(csvObj.Object)
	if err := json.Unmarshal(data, &csv); err != nil {
		return Options{}, nil, err
	}
	var plain []map[string]any
	obj := func(apiVersion, kind, name, ns string, fields map[string]any) map[string]any {
		meta := map[string]any{"name": name}
		if ns != "" {
			meta["namespace"] = ns
		}
		m := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
		for k, v := range fields {
			m[k] = v
		}
		return m
	}
	bundleSAs := map[string]bool{}
	for _, u := range rest {
		if u.GetKind() == "ServiceAccount" {
			bundleSAs[u.GetName()] = true
		}
	}
	sas := map[string]bool{}
	rawDeps, _, _ := unstructured.NestedSlice(csvObj.Object, "spec", "install", "spec", "deployments")
	for i, s := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		raw, _ := rawDeps[i].(map[string]any)
		d := obj("apps/v1", "Deployment", s.Name, plainNamespace, map[string]any{"spec": raw["spec"]})
		if len(s.Label) > 0 {
			d["metadata"].(map[string]any)["labels"] = toAnyMap(s.Label)
		}
		plain = append(plain, d)
		sas[s.Spec.Template.Spec.ServiceAccountName] = true
	}
	subject := func(sa string) []any {
		return []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": plainNamespace}}
	}
	strategy := csv.Spec.InstallStrategy.StrategySpec
	for i, p := range append(append([]operatorsv1alpha1.StrategyDeploymentPermissions(nil), strategy.Permissions...), strategy.ClusterPermissions...) {
		sa := p.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		sas[sa] = true
		rules, _ := toUnstructuredSlice(p.Rules)
		kind, bkind, ns := "Role", "RoleBinding", plainNamespace
		if i >= len(strategy.Permissions) {
			kind, bkind, ns = "ClusterRole", "ClusterRoleBinding", ""
		}
		name := fmt.Sprintf("csv-%s-%03d", strings.ToLower(kind), i)
		plain = append(plain, obj("rbac.authorization.k8s.io/v1", kind, name, ns, map[string]any{"rules": rules}),
			obj("rbac.authorization.k8s.io/v1", bkind, name, ns, map[string]any{
				"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}, "subjects": subject(sa)}))
	}
	for _, sa := range sortedKeys(sas) {
		if sa != "" && sa != "default" && !bundleSAs[sa] {
			plain = append(plain, obj("v1", "ServiceAccount", sa, plainNamespace, nil))
		}
	}
	crds, err := webhooksToPlain(&csv, rest, &plain, obj)
	if err != nil {
		return Options{}, nil, err
	}
	plain = append(plain, examplesToPlain(csvObj, crds)...)
	for _, u := range rest {
		plain = append(plain, u.Object)
	}
	for i, m := range plain {
		data, err := yaml.Marshal(m)
		if err != nil {
			return Options{}, nil, err
		}
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("%04d.yaml", i)), data, 0o644); err != nil {
			return Options{}, nil, err
		}
	}
	opts, watch := optionsOf(dir, &csv)
	return opts, watch, nil
}

type makeObj func(apiVersion, kind, name, ns string, fields map[string]any) map[string]any

// webhooksToPlain adds a Service per webhook Deployment and a configuration per admission webhook,
// and points the conversion of CRDs at their webhook. It returns the bundle's CRDs by group/Kind.
func webhooksToPlain(csv *operatorsv1alpha1.ClusterServiceVersion, rest []*unstructured.Unstructured, plain *[]map[string]any, obj makeObj) (map[string]bool, error) {
	crdByName, crds := map[string]*unstructured.Unstructured{}, map[string]bool{}
	for _, u := range rest {
		if u.GetKind() == "CustomResourceDefinition" {
			crdByName[u.GetName()] = u
			g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			crds[g+"/"+k] = true
		}
	}
	selectors := map[string]map[string]string{}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		if d.Spec.Selector != nil {
			selectors[d.Name] = d.Spec.Selector.MatchLabels
		}
	}
	ports := map[string]map[int32]any{}
	for _, w := range csv.Spec.WebhookDefinitions {
		port := w.ContainerPort
		if port == 0 {
			port = defaultWebhookPort
		}
		var target any = int64(port)
		if w.TargetPort != nil {
			target = w.TargetPort.String()
			if w.TargetPort.Type == 0 {
				target = int64(w.TargetPort.IntVal)
			}
		}
		if ports[w.DeploymentName] == nil {
			ports[w.DeploymentName] = map[int32]any{}
		}
		ports[w.DeploymentName][port] = target
		svc := "csv-webhook-" + strings.ReplaceAll(w.DeploymentName, ".", "-")
		ref := map[string]any{"name": svc, "namespace": plainNamespace, "port": int64(port)}
		if w.WebhookPath != nil {
			ref["path"] = *w.WebhookPath
		}
		switch w.Type {
		case operatorsv1alpha1.ConversionWebhook:
			versions := w.AdmissionReviewVersions
			if len(versions) == 0 {
				versions = []string{"v1"}
			}
			for _, name := range w.ConversionCRDs {
				if crd := crdByName[name]; crd != nil {
					_ = unstructured.SetNestedMap(crd.Object, map[string]any{"strategy": "Webhook", "webhook": map[string]any{
						"clientConfig": map[string]any{"service": ref}, "conversionReviewVersions": toAnySlice(versions)}}, "spec", "conversion")
				}
			}
		default:
			kind := "ValidatingWebhookConfiguration"
			if w.Type == operatorsv1alpha1.MutatingAdmissionWebhook {
				kind = "MutatingWebhookConfiguration"
			}
			hook := map[string]any{"name": w.GenerateName, "clientConfig": map[string]any{"service": ref}}
			data, _ := json.Marshal(struct {
				Rules                   any `json:"rules,omitempty"`
				FailurePolicy           any `json:"failurePolicy,omitempty"`
				MatchPolicy             any `json:"matchPolicy,omitempty"`
				ObjectSelector          any `json:"objectSelector,omitempty"`
				SideEffects             any `json:"sideEffects,omitempty"`
				TimeoutSeconds          any `json:"timeoutSeconds,omitempty"`
				AdmissionReviewVersions any `json:"admissionReviewVersions,omitempty"`
				ReinvocationPolicy      any `json:"reinvocationPolicy,omitempty"`
			}{w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.ReinvocationPolicy})
			var fields map[string]any
			_ = json.Unmarshal(data, &fields)
			for k, v := range fields {
				hook[k] = v
			}
			*plain = append(*plain, obj("admissionregistration.k8s.io/v1", kind, w.GenerateName, "", map[string]any{"webhooks": []any{hook}}))
		}
	}
	for _, dep := range sortedKeys(ports) {
		var list []any
		nums := make([]int, 0, len(ports[dep]))
		for p := range ports[dep] {
			nums = append(nums, int(p))
		}
		sort.Ints(nums)
		for _, p := range nums {
			list = append(list, map[string]any{"name": fmt.Sprintf("webhook-%d", p), "port": int64(p), "targetPort": ports[dep][int32(p)]})
		}
		*plain = append(*plain, obj("v1", "Service", "csv-webhook-"+strings.ReplaceAll(dep, ".", "-"), plainNamespace, map[string]any{
			"spec": map[string]any{"selector": toAnyMap(selectors[dep]), "ports": list}}))
	}
	return crds, nil
}

// examplesToPlain turns the alm-examples of the bundle's own CRDs into custom resources.
func examplesToPlain(csv *unstructured.Unstructured, crds map[string]bool) []map[string]any {
	var examples []map[string]any
	_ = json.Unmarshal([]byte(csv.GetAnnotations()[almExamplesAnnotation]), &examples)
	var out []map[string]any
	for _, e := range examples {
		u := unstructured.Unstructured{Object: e}
		if gk := u.GroupVersionKind().GroupKind(); crds[gk.Group+"/"+gk.Kind] && u.GetName() != "" {
			out = append(out, e)
		}
	}
	return out
}

// optionsOf are the generate options that describe the bundle in dir, and the namespaces to watch
// for its install mode: AllNamespaces if supported, else the first supported one.
func optionsOf(dir string, csv *operatorsv1alpha1.ClusterServiceVersion) (Options, []string) {
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	_ = yaml.Unmarshal(data, &ann)
	a := ann.Annotations
	o := Options{Package: a["operators.operatorframework.io.bundle.package.v1"], Version: csv.Spec.Version.String(),
		DefaultChannel: a["operators.operatorframework.io.bundle.channel.default.v1"]}
	for _, c := range strings.Split(a["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.Channels = append(o.Channels, c)
		}
	}
	var watch []string
	modes := map[operatorsv1alpha1.InstallModeType][]string{
		operatorsv1alpha1.InstallModeTypeAllNamespaces:   nil,
		operatorsv1alpha1.InstallModeTypeOwnNamespace:    {testInstallNamespace},
		operatorsv1alpha1.InstallModeTypeSingleNamespace: {"watched"},
		operatorsv1alpha1.InstallModeTypeMultiNamespace:  {"watched-a", "watched-b"},
	}
	first := ""
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			o.InstallModes = append(o.InstallModes, string(m.Type))
			if first == "" || m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces {
				first = string(m.Type)
			}
		}
	}
	if first != "" {
		watch = modes[operatorsv1alpha1.InstallModeType(first)]
	}
	return o, watch
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
