// Package v0fixture puts into a cluster what OLM v0 leaves there after installing a registry+v1
// bundle, for the tests of kubectl olmv1 migrate (OLM v0 itself cannot be built or run here).
//
// Install writes, from the bundle directory's CSV and CRDs, what OLM v0's controllers write: the
// CatalogSource, the OperatorGroup (with the namespaces it resolved in its status), the Subscription
// (status.installedCSV), the CSV (annotated by the OperatorGroup, phase Succeeded), the CRDs, the
// ServiceAccounts, the RBAC under OLM v0's generated names, and the Deployments with the pod
// template OLM v0 computes (the CSV's annotations copied onto it, Subscription.spec.config applied,
// OPERATOR_CONDITION_NAME injected, revisionHistoryLimit 1) — every object with OLM v0's
// ownerReferences (to the CSV, neither controller nor blocking) and labels (olm.owner,
// olm.owner.kind, olm.owner.namespace, operators.coreos.com/<package>.<namespace>). docs/migration.md
// lists the parts of OLM v0's source each of these comes from. Writes use OLM v0's field managers.
package v0fixture

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate"
)

// Field managers of OLM v0's two controllers.
const (
	olmManager     = "olm"
	catalogManager = "catalog"
)

// InstallCRDs installs OLM v0's CRDs (from github.com/operator-framework/api/crds) and waits until
// they are served.
func InstallCRDs(ctx context.Context, c client.Client) error {
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{
		crds.CatalogSource(), crds.ClusterServiceVersion(), crds.InstallPlan(), crds.OperatorGroup(),
		crds.Subscription(), crds.OperatorCondition(), crds.Operator(),
	} {
		if err := c.Create(ctx, crd.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Options say how the bundle was installed with OLM v0.
type Options struct {
	// Dir is the registry+v1 bundle directory.
	Dir string
	// Package is the package name.
	Package string
	// Namespace is the Subscription's (and the operator's) namespace.
	Namespace string
	// Targets are the OperatorGroup's target namespaces; nil is AllNamespaces.
	Targets []string
	// OperatorGroup, Subscription, Channel name them; CatalogSource lives in CatalogNamespace
	// with CatalogImage (empty: an address-only CatalogSource).
	OperatorGroup, Subscription, Channel          string
	CatalogSource, CatalogNamespace, CatalogImage string
	Approval                                      v0.Approval
	Config                                        *v0.SubscriptionConfig
	// CopyTo are namespaces that get a copied CSV (as OLM v0 writes into every target namespace of an
	// AllNamespaces or MultiNamespace OperatorGroup; the namespaces must exist).
	CopyTo []string
	// ControllerRef marks the Deployments' ownerReference to the CSV controller: OLM v0 does not,
	// but objects written by other means (or edited) may.
	ControllerRef bool
	// ExtraSubscriptions are other Subscriptions OLM v0 holds in the same namespace (a shared
	// OperatorGroup); only the Subscription objects are written.
	ExtraSubscriptions []string
}

// Installed is what Install wrote.
type Installed struct {
	CSV         *v0.ClusterServiceVersion
	Deployments []*appsv1.Deployment
}

// Install writes what OLM v0 leaves in the cluster for the bundle as o says.
func Install(ctx context.Context, c client.Client, o Options) (*Installed, error) {
	csv, crdObjs, err := readBundle(o.Dir)
	if err != nil {
		return nil, err
	}
	ns := o.Namespace
	component := migrate.ComponentLabel(o.Package, ns)
	targets := strings.Join(o.Targets, ",")

	// catalog operator: the CatalogSource, as the cluster admin created it.
	cs := &v0.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: o.CatalogSource, Namespace: o.CatalogNamespace},
		Spec:       v0.CatalogSourceSpec{SourceType: v0.SourceTypeGrpc, Image: o.CatalogImage, DisplayName: o.CatalogSource},
	}
	if o.CatalogImage == "" {
		cs.Spec.Address = "catalog." + o.CatalogNamespace + ".svc:50051"
	}
	if err := create(ctx, c, migrate.GVKCatalogSource, cs, catalogManager); err != nil {
		return nil, err
	}

	// The OperatorGroup, and the namespaces OLM v0's OperatorGroup controller resolved.
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: o.OperatorGroup, Namespace: ns}}
	og.Spec.TargetNamespaces = o.Targets
	og.Status.Namespaces = o.Targets
	if len(o.Targets) == 0 {
		og.Status.Namespaces = []string{""}
	}
	og.Status.LastUpdated = ptrNow()
	if err := createWithStatus(ctx, c, migrate.GVKOperatorGroup, og, olmManager); err != nil {
		return nil, err
	}

	// CRDs: created by the InstallPlan, labelled by OLM v0's operator controller.
	for _, crd := range crdObjs {
		crd.SetLabels(merge(crd.GetLabels(), map[string]string{component: ""}))
		err := c.Create(ctx, crd, client.FieldOwner(catalogManager))
		if apierrors.IsAlreadyExists(err) {
			// Installed before (CRDs are cluster-wide and outlive their operators): labelled again.
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{component: ""}}})
			err = c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(catalogManager))
		}
		if err != nil {
			return nil, fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
		if err := waitEstablished(ctx, c, crd.GetName()); err != nil {
			return nil, err
		}
	}

	// The CSV: the bundle's, with the properties annotation the catalog operator adds, the
	// OperatorGroup controller's annotations, and the status the CSV controller reached.
	csv.Namespace = ns
	csv.Labels = merge(csv.Labels, map[string]string{component: ""})
	csv.Annotations = merge(csv.Annotations, map[string]string{
		"operatorframework.io/properties":   propertiesAnnotation(o.Package, csv),
		migrate.AnnotationOperatorGroup:     o.OperatorGroup,
		migrate.AnnotationOperatorNamespace: ns,
		migrate.AnnotationTargetNamespaces:  targets,
	})
	csv.Status = v0.ClusterServiceVersionStatus{
		Phase: v0.CSVPhaseSucceeded, Reason: v0.CSVReasonInstallSuccessful, Message: "install strategy completed with no errors",
		LastUpdateTime: ptrNow(), LastTransitionTime: ptrNow(),
	}
	if err := createWithStatus(ctx, c, migrate.GVKCSV, csv, catalogManager); err != nil {
		return nil, err
	}

	for _, ns := range o.CopyTo {
		cp := &v0.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: csv.Name, Namespace: ns,
			Labels: map[string]string{migrate.LabelCopiedFrom: csv.Namespace}, Annotations: csv.Annotations}, Spec: csv.Spec}
		cp.Status = v0.ClusterServiceVersionStatus{Phase: v0.CSVPhaseSucceeded, Reason: v0.CSVReasonCopied, Message: "The operator is running in " + csv.Namespace + " but is managing this namespace"}
		if err := createWithStatus(ctx, c, migrate.GVKCSV, cp, olmManager); err != nil {
			return nil, err
		}
	}

	// The Subscription and, in a shared OperatorGroup, the others.
	sub := &v0.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: o.Subscription, Namespace: ns, Labels: map[string]string{component: ""}},
		Spec: &v0.SubscriptionSpec{
			CatalogSource: o.CatalogSource, CatalogSourceNamespace: o.CatalogNamespace, Package: o.Package,
			Channel: o.Channel, InstallPlanApproval: o.Approval, Config: o.Config,
		},
		Status: v0.SubscriptionStatus{InstalledCSV: csv.Name, CurrentCSV: csv.Name, State: v0.SubscriptionStateAtLatest, LastUpdated: *ptrNow()},
	}
	if err := createWithStatus(ctx, c, migrate.GVKSubscription, sub, catalogManager); err != nil {
		return nil, err
	}
	for _, extra := range o.ExtraSubscriptions {
		s := &v0.Subscription{
			ObjectMeta: metav1.ObjectMeta{Name: extra, Namespace: ns},
			Spec:       &v0.SubscriptionSpec{CatalogSource: o.CatalogSource, CatalogSourceNamespace: o.CatalogNamespace, Package: extra, Channel: o.Channel},
		}
		if err := create(ctx, c, migrate.GVKSubscription, s, catalogManager); err != nil {
			return nil, err
		}
	}

	owner := csvOwnerRef(csv)
	ownerLabels := map[string]string{migrate.LabelOwner: csv.Name, migrate.LabelOwnerNamespace: ns, migrate.LabelOwnerKind: migrate.CSVOwnerKind}
	if err := installRBAC(ctx, c, csv, o, owner, ownerLabels, component); err != nil {
		return nil, err
	}
	out := &Installed{CSV: csv}
	for _, spec := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		d := deployment(csv, spec, o.Config, owner, merge(ownerLabels, map[string]string{component: ""}))
		if o.ControllerRef {
			yes := true
			d.OwnerReferences[0].Controller = &yes
		}
		if err := c.Create(ctx, d, client.FieldOwner(olmManager)); err != nil {
			return nil, fmt.Errorf("creating Deployment %s: %w", d.Name, err)
		}
		out.Deployments = append(out.Deployments, d)
	}
	return out, nil
}

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

// readBundle reads the CSV and the CRDs of a registry+v1 bundle directory.
func readBundle(dir string) (*v0.ClusterServiceVersion, []*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, nil, err
	}
	var csv *v0.ClusterServiceVersion
	var crdObjs []*unstructured.Unstructured
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			return nil, nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		switch u.GetKind() {
		case "ClusterServiceVersion":
			csv = &v0.ClusterServiceVersion{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, csv); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
		case "CustomResourceDefinition":
			crdObjs = append(crdObjs, u)
		}
	}
	if csv == nil {
		return nil, nil, fmt.Errorf("%s: no ClusterServiceVersion in manifests/", dir)
	}
	return csv, crdObjs, nil
}

// create writes obj of OLM v0's API as unstructured (the client's scheme may not know it).
func create(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, manager string) error {
	return write(ctx, c, gvk, obj, manager, false)
}

// createWithStatus creates obj, then writes its status through the status subresource.
func createWithStatus(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, manager string) error {
	return write(ctx, c, gvk, obj, manager, true)
}

func write(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, manager string, withStatus bool) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	status := m["status"]
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	what := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
	if err := c.Create(ctx, u, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	obj.SetUID(u.GetUID())
	if !withStatus || status == nil {
		return nil
	}
	u.Object["status"] = status
	if err := c.Status().Update(ctx, u, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("writing the status of %s: %w", what, err)
	}
	return nil
}

func mergeEnv(have, add []corev1.EnvVar) []corev1.EnvVar {
	out := append([]corev1.EnvVar(nil), have...)
next:
	for _, a := range add {
		for i := range out {
			if out[i].Name == a.Name {
				out[i] = a
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// merge returns a copy of a with b's entries added (b wins).
func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func ptrNow() *metav1.Time {
	t := metav1.NewTime(time.Now().Truncate(time.Second))
	return &t
}
