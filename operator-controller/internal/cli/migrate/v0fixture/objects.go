package v0fixture

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate"
)

// The objects OLM v0 writes for a CSV, with its names, labels and ownerReferences.

// deployment is the Deployment OLM v0's CSV controller writes for one deployment spec of the CSV.
func deployment(csv *v0.ClusterServiceVersion, s v0.StrategyDeploymentSpec, cfg *v0.SubscriptionConfig, owner metav1.OwnerReference, labels map[string]string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: csv.Namespace}, Spec: *s.Spec.DeepCopy()}
	// The CSV's annotations are merged into the pod template's, the CSV's winning.
	d.Spec.Template.Annotations = merge(d.Spec.Template.Annotations, csv.Annotations)
	d.Labels = merge(s.Label, labels)
	d.OwnerReferences = []metav1.OwnerReference{owner}
	pod := &d.Spec.Template.Spec
	// Subscription.spec.config (the deployment initializers), then OPERATOR_CONDITION_NAME.
	if cfg != nil {
		for i := range pod.Containers {
			pod.Containers[i].Env = mergeEnv(pod.Containers[i].Env, cfg.Env)
			pod.Containers[i].EnvFrom = append(pod.Containers[i].EnvFrom, cfg.EnvFrom...)
			if cfg.Resources != nil {
				pod.Containers[i].Resources = *cfg.Resources.DeepCopy()
			}
		}
		if cfg.NodeSelector != nil {
			pod.NodeSelector = cfg.NodeSelector
		}
		pod.Tolerations = append(pod.Tolerations, cfg.Tolerations...)
	}
	for i := range pod.Containers {
		pod.Containers[i].Env = mergeEnv(pod.Containers[i].Env, []corev1.EnvVar{{Name: migrate.EnvOperatorConditionName, Value: csv.Name}})
	}
	limit := int32(1)
	d.Spec.RevisionHistoryLimit = &limit
	d.Labels[migrate.LabelDeploymentSpecHash] = specHash(d.Spec)
	return d
}

// installRBAC writes the ServiceAccounts and RBAC the InstallPlan creates for the CSV, under OLM
// v0's names (the CSV's name, the service account and a hash), and for AllNamespaces the cluster-wide
// copies OLM v0's OperatorGroup controller makes of the namespaced permissions.
func installRBAC(ctx context.Context, c client.Client, csv *v0.ClusterServiceVersion, o Options, owner metav1.OwnerReference, ownerLabels map[string]string, component string) error {
	strategy := csv.Spec.InstallStrategy.StrategySpec
	sas := map[string]bool{}
	for _, p := range append(append([]v0.StrategyDeploymentPermissions(nil), strategy.Permissions...), strategy.ClusterPermissions...) {
		if sas[p.ServiceAccountName] {
			continue
		}
		sas[p.ServiceAccountName] = true
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.ServiceAccountName, Namespace: csv.Namespace,
			OwnerReferences: []metav1.OwnerReference{owner}, Labels: map[string]string{component: ""}}}
		if err := c.Create(ctx, sa, client.FieldOwner(catalogManager)); err != nil {
			return fmt.Errorf("creating ServiceAccount %s: %w", sa.Name, err)
		}
	}
	var objs []client.Object
	for _, p := range strategy.Permissions {
		name := generateName(csv.Name+"-"+p.ServiceAccountName, []any{csv.Name, p})
		subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.ServiceAccountName, Namespace: csv.Namespace}}
		meta := metav1.ObjectMeta{Name: name, Namespace: csv.Namespace, OwnerReferences: []metav1.OwnerReference{owner}, Labels: merge(ownerLabels, nil)}
		objs = append(objs,
			&rbacv1.Role{ObjectMeta: meta, Rules: p.Rules},
			&rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
		if len(o.Targets) == 0 {
			cname := generateName(csv.Name+"-"+p.ServiceAccountName, []any{csv.Name, csv.Namespace, p})
			cmeta := metav1.ObjectMeta{Name: cname, Labels: merge(ownerLabels, nil)}
			rules := append(append([]rbacv1.PolicyRule(nil), p.Rules...), rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}})
			objs = append(objs,
				&rbacv1.ClusterRole{ObjectMeta: cmeta, Rules: rules},
				&rbacv1.ClusterRoleBinding{ObjectMeta: cmeta, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cname}})
		}
	}
	for _, p := range strategy.ClusterPermissions {
		name := generateName(csv.Name, []any{csv.Name, csv.Namespace, p})
		subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: p.ServiceAccountName, Namespace: csv.Namespace}}
		meta := metav1.ObjectMeta{Name: name, Labels: merge(ownerLabels, nil)}
		objs = append(objs,
			&rbacv1.ClusterRole{ObjectMeta: meta, Rules: p.Rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj, client.FieldOwner(catalogManager)); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// generateName is base, a dash and a short hash of what the object is made from (OLM v0's
// generated RBAC names have this shape).
func generateName(base string, from any) string {
	b, _ := json.Marshal(from)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return base + "-" + rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

func specHash(spec appsv1.DeploymentSpec) string {
	b, _ := json.Marshal(spec)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

func csvOwnerRef(csv *v0.ClusterServiceVersion) metav1.OwnerReference {
	f := false
	return metav1.OwnerReference{APIVersion: migrate.GVKCSV.GroupVersion().String(), Kind: migrate.CSVOwnerKind, Name: csv.Name, UID: csv.UID,
		Controller: &f, BlockOwnerDeletion: &f}
}

// propertiesAnnotation is the operatorframework.io/properties annotation OLM v0's catalog operator
// puts on the CSVs it installs: the bundle's properties.
func propertiesAnnotation(pkg string, csv *v0.ClusterServiceVersion) string {
	props := []map[string]any{{"type": "olm.package", "value": map[string]string{"packageName": pkg, "version": csv.Spec.Version.String()}}}
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		group := crd.Name[strings.Index(crd.Name, ".")+1:]
		props = append(props, map[string]any{"type": "olm.gvk", "value": map[string]string{"group": group, "kind": crd.Kind, "version": crd.Version}})
	}
	b, _ := json.Marshal(map[string]any{"properties": props})
	return string(b)
}
