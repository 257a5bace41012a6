package registryv1

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

const realNS = "operators"

// kindCounts returns "Kind=n" for every kind, sorted, for compact comparisons.
func (r *rendered) kindCounts() string {
	c := map[string]int{}
	for _, o := range r.objs {
		c[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	return fmt.Sprint(c)
}

// checkCommon asserts what holds for every rendered bundle: every namespaced object generated or
// taken from the bundle is in the install namespace (Roles/RoleBindings may be in watched ones),
// cluster-scoped objects have none, every Deployment carries olm.targetNamespaces, and every
// (Cluster)RoleBinding binds a ServiceAccount that is rendered.
func checkCommon(t *testing.T, r *rendered, targets string, watched []string) {
	t.Helper()
	clusterKinds := map[string]bool{"CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
		"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true}
	allowedNS := map[string]bool{realNS: true}
	for _, w := range watched {
		allowedNS[w] = true
	}
	for _, o := range r.objs {
		u := o.(*unstructured.Unstructured)
		kind := u.GetKind()
		switch {
		case clusterKinds[kind]:
			if u.GetNamespace() != "" {
				t.Errorf("%s %s is cluster-scoped but has namespace %q", kind, u.GetName(), u.GetNamespace())
			}
		case kind == "Role" || kind == "RoleBinding":
			if !allowedNS[u.GetNamespace()] {
				t.Errorf("%s %s in namespace %q, neither install nor watched", kind, u.GetName(), u.GetNamespace())
			}
		default:
			if u.GetNamespace() != realNS {
				t.Errorf("%s %s in namespace %q, want %q", kind, u.GetName(), u.GetNamespace(), realNS)
			}
		}
		if kind == "Deployment" {
			if got := u.GetAnnotations()[TargetNamespacesAnnotation]; got != targets {
				t.Errorf("Deployment %s %s=%q, want %q", u.GetName(), TargetNamespacesAnnotation, got, targets)
			}
			if got := str(u, "spec", "template", "metadata", "annotations", TargetNamespacesAnnotation); got != targets {
				t.Errorf("Deployment %s pod template %s=%q, want %q", u.GetName(), TargetNamespacesAnnotation, got, targets)
			}
			if got := str(u, "spec", "template", "metadata", "annotations", OperatorNamespaceAnnotation); got != realNS {
				t.Errorf("Deployment %s pod template %s=%q, want %q", u.GetName(), OperatorNamespaceAnnotation, got, realNS)
			}
			if got, _, _ := unstructured.NestedInt64(u.Object, "spec", "revisionHistoryLimit"); got != 1 {
				t.Errorf("Deployment %s revisionHistoryLimit %d, want 1", u.GetName(), got)
			}
		}
		if kind == "Service" {
			if errs := validation.IsDNS1035Label(u.GetName()); len(errs) > 0 {
				t.Errorf("Service %s: invalid name: %v", u.GetName(), errs)
			}
		}
		if kind == "ClusterRoleBinding" && len(watched) == 0 && r.has("ClusterRole /"+u.GetName()) && strings.HasPrefix(u.GetName(), "bd-") && !strings.HasSuffix(u.GetName(), "-cluster") {
			// The ClusterRole made from permissions in AllNamespaces mode lets the operator read namespaces.
			if !grantsNamespacesRead(r.get("ClusterRole /" + u.GetName())) {
				t.Errorf("ClusterRole %s (from permissions, AllNamespaces) does not grant get/list/watch on namespaces", u.GetName())
			}
		}
		if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				m := s.(map[string]any)
				if m["kind"] == "ServiceAccount" && !r.has(fmt.Sprintf("ServiceAccount %s/%s", m["namespace"], m["name"])) {
					t.Errorf("%s %s binds ServiceAccount %s/%s, which is not rendered", kind, u.GetName(), m["namespace"], m["name"])
				}
			}
		}
	}
}

// grantsNamespacesRead reports whether a (Cluster)Role has the rule OLM v0 adds for AllNamespaces.
func grantsNamespacesRead(u *unstructured.Unstructured) bool {
	rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
	for _, r := range rules {
		if reflect.DeepEqual(r, map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}, "verbs": []any{"get", "list", "watch"}}) {
			return true
		}
	}
	return false
}

// webhookTargets returns, for each webhook configuration, "Kind/name → service:port path".
func webhookTargets(r *rendered) []string {
	var out []string
	for _, key := range r.keys() {
		u := r.idx[key]
		if u.GetKind() != "ValidatingWebhookConfiguration" && u.GetKind() != "MutatingWebhookConfiguration" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			svc, _, _ := unstructured.NestedMap(h.(map[string]any), "clientConfig", "service")
			out = append(out, fmt.Sprintf("%s/%s→%s/%s:%v", u.GetKind(), u.GetName(), svc["namespace"], svc["name"], svc["port"]))
		}
	}
	return out
}

func TestStrimziAllInstallModes(t *testing.T) {
	dir := testdataBundles(t)
	crds := []string{"kafkabridges.kafka.strimzi.io", "kafkaconnectors.kafka.strimzi.io", "kafkaconnects.kafka.strimzi.io",
		"kafkamirrormaker2s.kafka.strimzi.io", "kafkamirrormakers.kafka.strimzi.io", "kafkarebalances.kafka.strimzi.io",
		"kafkas.kafka.strimzi.io", "kafkatopics.kafka.strimzi.io", "kafkausers.kafka.strimzi.io", "strimzipodsets.core.strimzi.io"}
	for _, version := range []string{"0.33.0", "0.34.0", "0.35.0"} {
		for _, tc := range []struct {
			mode    string
			watch   []string
			targets string
			roleNS  []string
		}{
			{"AllNamespaces", nil, "", nil},
			{"OwnNamespace", []string{realNS}, realNS, []string{realNS}},
			{"SingleNamespace", []string{"kafka"}, "kafka", []string{"kafka", realNS}},
			{"MultiNamespace", []string{"kafka-b", "kafka-a"}, "kafka-a,kafka-b", []string{"kafka-a", "kafka-b", realNS}},
		} {
			t.Run(version+"/"+tc.mode, func(t *testing.T) {
				r := mustRender(t, filepath.Join(dir, "strimzi-kafka-operator", version), realNS, watch(tc.watch...))
				checkCommon(t, r, tc.targets, tc.watch)
				var wantCRDs []string
				for _, c := range crds {
					wantCRDs = append(wantCRDs, "/"+c)
				}
				if got := r.names("CustomResourceDefinition"); !reflect.DeepEqual(got, wantCRDs) {
					t.Errorf("CRDs %v", got)
				}
				dep := r.get("Deployment " + realNS + "/strimzi-cluster-operator-v" + version)
				if str(dep, "spec", "template", "spec", "serviceAccountName") != "strimzi-cluster-operator" {
					t.Errorf("deployment service account %q", str(dep, "spec", "template", "spec", "serviceAccountName"))
				}
				containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
				found := false
				for _, e := range containers[0].(map[string]any)["env"].([]any) {
					if m := e.(map[string]any); m["name"] == "STRIMZI_NAMESPACE" {
						found = str(&unstructured.Unstructured{Object: m}, "valueFrom", "fieldRef", "fieldPath") == "metadata.annotations['olm.targetNamespaces']"
					}
				}
				if !found {
					t.Errorf("STRIMZI_NAMESPACE no longer reads olm.targetNamespaces")
				}
				if ex := str(dep, "spec", "template", "metadata", "annotations", "alm-examples"); !json.Valid([]byte(ex)) || ex == "" {
					t.Errorf("CSV annotation alm-examples not copied to the pod template")
				}
				r.get("ServiceAccount " + realNS + "/strimzi-cluster-operator")
				r.get("ConfigMap " + realNS + "/strimzi-cluster-operator")
				for _, cr := range []string{"strimzi-entity-operator", "strimzi-kafka-broker", "strimzi-kafka-client", "bd-strimzi-cluster-operator-cluster"} {
					r.get("ClusterRole /" + cr)
				}
				r.get("ClusterRoleBinding /bd-strimzi-cluster-operator-cluster")
				if tc.roleNS == nil {
					r.get("ClusterRole /bd-strimzi-cluster-operator")
					r.get("ClusterRoleBinding /bd-strimzi-cluster-operator")
					if r.count("Role")+r.count("RoleBinding") != 0 {
						t.Errorf("AllNamespaces renders no Roles")
					}
				} else {
					var want []string
					for _, ns := range tc.roleNS {
						want = append(want, ns+"/bd-strimzi-cluster-operator")
					}
					if got := r.names("Role"); !reflect.DeepEqual(got, want) {
						t.Errorf("Roles %v, want %v", got, want)
					}
					if got := r.names("RoleBinding"); !reflect.DeepEqual(got, want) {
						t.Errorf("RoleBindings %v, want %v", got, want)
					}
				}
				if want := 20 + 2*max(len(tc.roleNS)-1, 0); len(r.objs) != want {
					t.Errorf("%d objects, want %d: %s", len(r.objs), want, r.kindCounts())
				}
			})
		}
	}
}

func TestKubevirtHyperconverged(t *testing.T) {
	dir := filepath.Join(testdataBundles(t), "community-kubevirt-hyperconverged", "1.17.3")
	r := mustRender(t, dir, realNS, nil, selfSigned)
	checkCommon(t, r, "", nil)
	if got := r.kindCounts(); got != "map[ClusterRole:16 ClusterRoleBinding:16 CustomResourceDefinition:8 Deployment:10 MutatingWebhookConfiguration:2 Secret:3 Service:3 ServiceAccount:9 ValidatingWebhookConfiguration:4]" {
		t.Errorf("kinds %s", got)
	}
	for _, d := range []string{"hco-operator", "hco-webhook", "virt-operator", "cdi-operator", "cluster-network-addons-operator", "ssp-operator", "hostpath-provisioner-operator", "aaq-operator", "kubevirt-migration-operator", "hyperconverged-cluster-cli-download"} {
		r.get("Deployment " + realNS + "/" + d)
	}
	for _, s := range []string{"hco-webhook-service", "hostpath-provisioner-operator-service", "ssp-operator-service"} {
		r.get("Service " + realNS + "/" + s)
		r.get("Secret " + realNS + "/" + s + "-cert")
	}
	want := []string{
		"MutatingWebhookConfiguration/mutate-hyperconverged-hco.kubevirt.io→operators/hco-webhook-service:4343",
		"MutatingWebhookConfiguration/mutate-ns-hco.kubevirt.io→operators/hco-webhook-service:4343",
	}
	if got := webhookTargets(r); !reflect.DeepEqual(got[:2], want) {
		t.Errorf("mutating webhooks %v", got[:2])
	}
	h := firstHook(t, r.get("MutatingWebhookConfiguration /mutate-ns-hco.kubevirt.io"))
	if sel, _, _ := unstructured.NestedStringMap(h, "objectSelector", "matchLabels"); sel["kubernetes.io/metadata.name"] != "kubevirt-hyperconverged" {
		t.Errorf("objectSelector not carried over: %v", h["objectSelector"])
	}
	if se, _, _ := unstructured.NestedString(h, "sideEffects"); se != "NoneOnDryRun" {
		t.Errorf("sideEffects %q", se)
	}
	for _, mode := range [][]string{{realNS}, {"other"}, {"a", "b"}} {
		_, err := render(t, dir, realNS, watch(mode...), selfSigned)
		wantInvalid(t, err, "UnsupportedInstallMode", "it supports AllNamespaces (omit watchNamespaces)")
	}
}

func TestCertManagerWebhooks(t *testing.T) {
	dir := filepath.Join(testdataBundles(t), "cert-manager", "1.16.5")
	r := mustRender(t, dir, realNS, nil, selfSigned)
	checkCommon(t, r, "", nil)
	if len(r.objs) != 34 {
		t.Errorf("%d objects: %s", len(r.objs), r.kindCounts())
	}
	for _, d := range []string{"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"} {
		r.get("Deployment " + realNS + "/" + d)
		r.get("ServiceAccount " + realNS + "/" + d)
	}
	if got, want := webhookTargets(r), []string{
		"MutatingWebhookConfiguration/mutate.webhooks.cert-manager.io→operators/cert-manager-webhook-service:443",
		"ValidatingWebhookConfiguration/validate.webhooks.cert-manager.io→operators/cert-manager-webhook-service:443",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("webhooks %v", got)
	}
	svc := r.get("Service " + realNS + "/cert-manager-webhook-service")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["targetPort"] != "https" {
		t.Errorf("webhook Service ports %v, want 443 → the named port https", ports)
	}
	r.get("Service " + realNS + "/cert-manager-webhook") // the bundle's own Service stays
	r.get("Secret " + realNS + "/cert-manager-webhook-service-cert")
	// cert-manager's webhook reads its certificate from the OLM path its args name.
	d := typedDeploymentIn(t, r, realNS, "cert-manager-webhook")
	c := d.Spec.Template.Spec.Containers[0]
	if !strings.Contains(strings.Join(c.Args, " "), apiserviceCertPath+"/apiserver.crt") {
		t.Errorf("args %v", c.Args)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.MountPath == apiserviceCertPath
	}
	if !mounted {
		t.Errorf("serving certificate not mounted at %s", apiserviceCertPath)
	}
	_, err := render(t, dir, realNS, nil)
	wantInvalid(t, err, "WebhooksUnsupported", `"cert-manager.v1.16.5"`)
}

func TestGitlabOwnNamespaceOnly(t *testing.T) {
	dir := filepath.Join(testdataBundles(t), "gitlab-operator-kubernetes", "3.3.0")
	r := mustRender(t, dir, realNS, watch(realNS), selfSigned)
	checkCommon(t, r, realNS, []string{realNS})
	if got := r.kindCounts(); got != "map[ClusterRole:5 ClusterRoleBinding:4 CustomResourceDefinition:1 Deployment:1 Role:2 RoleBinding:2 Secret:1 Service:3 ServiceAccount:4 ValidatingWebhookConfiguration:1]" {
		t.Errorf("kinds %s", got)
	}
	if got, want := r.names("Role"), []string{realNS + "/bd-gitlab-manager", realNS + "/bd-gitlab-nginx-ingress"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Roles %v", got)
	}
	// The bundle's ClusterRoleBinding hard-codes namespace gitlab-system for its ServiceAccount.
	crb := r.get("ClusterRoleBinding /gitlab-prometheus-server")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if ns := subjects[0].(map[string]any)["namespace"]; ns != realNS {
		t.Errorf("subject namespace %v, want %s", ns, realNS)
	}
	h := firstHook(t, r.get("ValidatingWebhookConfiguration /vgitlab.kb.io"))
	vals, _, _ := unstructured.NestedSlice(h, "namespaceSelector", "matchExpressions")
	if len(vals) != 1 || !reflect.DeepEqual(vals[0].(map[string]any)["values"], []any{realNS}) {
		t.Errorf("OwnNamespace webhook namespaceSelector %v", vals)
	}
	if got := webhookTargets(r); !reflect.DeepEqual(got, []string{"ValidatingWebhookConfiguration/vgitlab.kb.io→operators/gitlab-controller-manager-service:443"}) {
		t.Errorf("webhooks %v", got)
	}

	// OwnNamespace is the default of an OwnNamespace-only bundle: omitting watchNamespaces renders
	// exactly what watchNamespaces: [operators] does.
	if byDefault := mustRender(t, dir, realNS, nil, selfSigned); !reflect.DeepEqual(byDefault.objs, r.objs) {
		t.Errorf("gitlab without watchNamespaces differs from OwnNamespace: %s", byDefault.kindCounts())
	}
	_, err := render(t, dir, realNS, watch("elsewhere"), selfSigned)
	wantInvalid(t, err, "UnsupportedInstallMode", "install mode SingleNamespace", "gitlab-operator-kubernetes.v3.3.0", "it supports OwnNamespace (omit watchNamespaces or set it to [operators])")
}

func TestRabbitMQTopologyOperator(t *testing.T) {
	dir := filepath.Join(testdataBundles(t), "rabbitmq-messaging-topology-operator", "1.19.3")
	for _, tc := range []struct {
		watch   []string
		targets string
		roles   int
	}{{nil, "", 0}, {[]string{realNS}, realNS, 1}, {[]string{"rabbit"}, "rabbit", 2}, {[]string{"r1", "r2"}, "r1,r2", 3}} {
		t.Run(tc.targets, func(t *testing.T) {
			r := mustRender(t, dir, realNS, watch(tc.watch...), selfSigned)
			checkCommon(t, r, tc.targets, tc.watch)
			if r.count("CustomResourceDefinition") != 13 || r.count("ValidatingWebhookConfiguration") != 13 || r.count("Role") != tc.roles {
				t.Errorf("kinds %s", r.kindCounts())
			}
			for _, w := range webhookTargets(r) {
				if !strings.HasSuffix(w, "→operators/messaging-topology-operator-service:443") {
					t.Errorf("webhook %s", w)
				}
			}
			svc := r.get("Service " + realNS + "/messaging-topology-operator-service")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if len(ports) != 1 || ports[0].(map[string]any)["targetPort"] != int64(9443) {
				t.Errorf("Service ports %v", ports)
			}
		})
	}
}

func TestNodeHealthcheckOperator(t *testing.T) {
	dir := filepath.Join(testdataBundles(t), "node-healthcheck-operator", "0.8.0")
	r := mustRender(t, dir, realNS, nil, selfSigned)
	checkCommon(t, r, "", nil)
	if len(r.objs) != 15 {
		t.Errorf("%d objects: %s", len(r.objs), r.kindCounts())
	}
	for _, k := range []string{
		"Deployment operators/node-healthcheck-controller-manager", "Deployment operators/node-healthcheck-node-remediation-console-plugin",
		"Service operators/node-healthcheck-controller-manager-service", "Service operators/node-healthcheck-webhook-service",
		"CustomResourceDefinition /nodehealthchecks.remediation.medik8s.io", "ClusterRole /node-healthcheck-metrics-reader",
	} {
		r.get(k)
	}
	if got := webhookTargets(r); !reflect.DeepEqual(got, []string{"ValidatingWebhookConfiguration/vnodehealthcheck.kb.io→operators/node-healthcheck-controller-manager-service:443"}) {
		t.Errorf("webhooks %v", got)
	}
	// deploymentConfig reaches both Deployments of a real bundle.
	cfg := &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{NodeSelector: map[string]string{"infra": "true"}}}
	r = mustRender(t, dir, realNS, cfg, selfSigned)
	for _, d := range []string{"node-healthcheck-controller-manager", "node-healthcheck-node-remediation-console-plugin"} {
		if ns := str(r.get("Deployment "+realNS+"/"+d), "spec", "template", "spec", "nodeSelector", "infra"); ns != "true" {
			t.Errorf("%s nodeSelector not applied", d)
		}
	}
}
