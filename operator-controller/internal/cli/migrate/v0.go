package migrate

import (
	"context"
	"fmt"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The marks OLM v0 leaves on what it installs (see docs/migration.md for where in OLM v0's source
// each comes from).
const (
	// LabelOwner, LabelOwnerKind and LabelOwnerNamespace name the CSV that owns an object; OLM v0
	// finds the Deployments of a CSV, and the cluster-scoped objects it deletes with a CSV, by them.
	LabelOwner          = "olm.owner"
	LabelOwnerKind      = "olm.owner.kind"
	LabelOwnerNamespace = "olm.owner.namespace"
	// LabelCopiedFrom marks a copied CSV: the copy OLM v0 puts into each target namespace.
	LabelCopiedFrom = "olm.copiedFrom"
	// LabelDeploymentSpecHash is OLM v0's hash of the Deployment spec it wrote.
	LabelDeploymentSpecHash = "olm.deployment-spec-hash"
	// componentLabelPrefix starts the label operators.coreos.com/<package>.<namespace> OLM v0 puts on
	// every component of an installed operator (Subscription, CSV, CRDs, Deployments ...).
	componentLabelPrefix = "operators.coreos.com/"

	// AnnotationOperatorGroup, AnnotationOperatorNamespace and AnnotationTargetNamespaces are set by
	// OLM v0's OperatorGroup controller on the CSV and copied onto the operator's pod templates.
	AnnotationOperatorGroup     = "olm.operatorGroup"
	AnnotationOperatorNamespace = "olm.operatorNamespace"
	AnnotationTargetNamespaces  = "olm.targetNamespaces"
	// EnvOperatorConditionName is the variable OLM v0 adds to every container of a CSV's
	// Deployments: the name of the CSV's OperatorCondition.
	EnvOperatorConditionName = "OPERATOR_CONDITION_NAME"

	// CSVOwnerKind is the value of LabelOwnerKind for a CSV.
	CSVOwnerKind = "ClusterServiceVersion"
)

// ComponentLabel is OLM v0's component label of package pkg installed in namespace ns.
func ComponentLabel(pkg, ns string) string { return componentLabelPrefix + pkg + "." + ns }

// GroupVersionKinds of OLM v0's API.
var (
	GVKSubscription      = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	GVKCSV               = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	GVKCatalogSource     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "CatalogSource"}
	GVKOperatorGroup     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OperatorGroup"}
	GVKOperatorCondition = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v2", Kind: "OperatorCondition"}
)

// kubeSystem is where OLM v0 writes the auth-reader RoleBindings of webhook and APIService
// Deployments.
const kubeSystem = "kube-system"

// markedKinds are the kinds OLM v0 creates for a CSV, which may carry its marks.
var markedKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// V0 is one operator as OLM v0 installed it: what migrate reads from the cluster.
type V0 struct {
	// Namespace is the Subscription's namespace (the install namespace).
	Namespace string
	// Subscription is nil once migrate deleted it.
	Subscription *v0.Subscription
	// CSV is the installed CSV (status.installedCSV); nil when it does not exist (any more).
	CSV *v0.ClusterServiceVersion
	// CatalogSource is the Subscription's CatalogSource; nil when it does not exist.
	CatalogSource *v0.CatalogSource
	// OperatorGroups are the OperatorGroups of the namespace.
	OperatorGroups []operatorsv1.OperatorGroup
	// Subscriptions and CSVs are all of the namespace (for shared OperatorGroups and dependencies).
	Subscriptions []v0.Subscription
	CSVs          []v0.ClusterServiceVersion
	// CopiedCSVs are the copies of CSV in other namespaces (label olm.copiedFrom).
	CopiedCSVs []v0.ClusterServiceVersion
	// Marked are the objects that carry OLM v0's marks of the CSV: an ownerReference to it, its
	// olm.owner labels or the package's component label; CRDs the CSV owns are here too.
	Marked []*unstructured.Unstructured
}

// ReadV0 reads the operator OLM v0 installed for Subscription ns/name. csvName (optional) names the
// CSV when the Subscription is gone (a resumed migration).
func ReadV0(ctx context.Context, c client.Reader, ns, name, csvName, pkg string) (*V0, error) {
	st := &V0{Namespace: ns}
	sub := &v0.Subscription{}
	switch err := getTyped(ctx, c, GVKSubscription, types.NamespacedName{Namespace: ns, Name: name}, sub); {
	case err == nil:
		st.Subscription = sub
		if sub.Status.InstalledCSV != "" {
			csvName = sub.Status.InstalledCSV
		}
		pkg = sub.Spec.Package
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	if csvName != "" {
		csv := &v0.ClusterServiceVersion{}
		switch err := getTyped(ctx, c, GVKCSV, types.NamespacedName{Namespace: ns, Name: csvName}, csv); {
		case err == nil:
			st.CSV = csv
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	if sub := st.Subscription; sub != nil {
		csNS := sub.Spec.CatalogSourceNamespace
		if csNS == "" {
			csNS = ns
		}
		cs := &v0.CatalogSource{}
		switch err := getTyped(ctx, c, GVKCatalogSource, types.NamespacedName{Namespace: csNS, Name: sub.Spec.CatalogSource}, cs); {
		case err == nil:
			st.CatalogSource = cs
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	if err := listTyped(ctx, c, GVKOperatorGroup, ns, &st.OperatorGroups); err != nil {
		return nil, err
	}
	if err := listTyped(ctx, c, GVKSubscription, ns, &st.Subscriptions); err != nil {
		return nil, err
	}
	if err := listTyped(ctx, c, GVKCSV, ns, &st.CSVs); err != nil {
		return nil, err
	}
	if csvName != "" {
		var copies []v0.ClusterServiceVersion
		if err := listTyped(ctx, c, GVKCSV, "", &copies, client.MatchingLabels{LabelCopiedFrom: ns}); err != nil {
			return nil, err
		}
		for _, cp := range copies {
			if cp.Name == csvName && cp.Namespace != ns {
				st.CopiedCSVs = append(st.CopiedCSVs, cp)
			}
		}
	}
	marked, err := readMarked(ctx, c, ns, csvName, pkg, st.CSV)
	if err != nil {
		return nil, err
	}
	st.Marked = marked
	return st, nil
}

// readMarked lists the objects carrying the marks of CSV ns/csvName (or of package pkg), and the
// CRDs csv owns.
func readMarked(ctx context.Context, c client.Reader, ns, csvName, pkg string, csv *v0.ClusterServiceVersion) ([]*unstructured.Unstructured, error) {
	owned := map[string]bool{}
	if csv != nil {
		for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
			owned[d.Name] = true
		}
	}
	var out []*unstructured.Unstructured
	for _, gvk := range markedKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		var opts []client.ListOption
		if namespaced(gvk) {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := c.List(ctx, l, opts...); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		if gvk.Kind == "RoleBinding" && ns != kubeSystem && csvName != "" {
			// OLM v0 binds a webhook's or APIService's ServiceAccount to
			// extension-apiserver-authentication-reader in kube-system (<service>-auth-reader).
			more := &unstructured.UnstructuredList{}
			more.SetGroupVersionKind(l.GroupVersionKind())
			if err := c.List(ctx, more, client.InNamespace(kubeSystem), client.MatchingLabels{LabelOwner: csvName, LabelOwnerNamespace: ns}); err != nil {
				return nil, fmt.Errorf("listing RoleBindings in %s: %w", kubeSystem, err)
			}
			l.Items = append(l.Items, more.Items...)
		}
		for i := range l.Items {
			u := &l.Items[i]
			if hasV0Marks(u, ns, csvName, pkg, csv) || (gvk.Kind == "CustomResourceDefinition" && owned[u.GetName()]) {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// hasV0Marks reports whether u carries a mark of CSV ns/csvName or of package pkg in ns.
func hasV0Marks(u *unstructured.Unstructured, ns, csvName, pkg string, csv *v0.ClusterServiceVersion) bool {
	if csv != nil && ownerRefToCSV(u, csv) >= 0 {
		return true
	}
	l := u.GetLabels()
	if csvName != "" && l[LabelOwner] == csvName && l[LabelOwnerNamespace] == ns && l[LabelOwnerKind] == CSVOwnerKind {
		return true
	}
	if pkg != "" {
		if _, ok := l[ComponentLabel(pkg, ns)]; ok {
			return true
		}
	}
	return false
}

// ownerRefToCSV is the index of u's ownerReference to csv, or -1.
func ownerRefToCSV(u client.Object, csv *v0.ClusterServiceVersion) int {
	for i, r := range u.GetOwnerReferences() {
		if r.UID == csv.UID || (r.Kind == CSVOwnerKind && r.Name == csv.Name && u.GetNamespace() == csv.Namespace) {
			return i
		}
	}
	return -1
}

// namespaced reports whether OLM v0 creates objects of kind gvk in the operator's namespace.
func namespaced(gvk schema.GroupVersionKind) bool {
	switch gvk.Kind {
	case "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "CustomResourceDefinition":
		return false
	}
	return true
}

// getTyped reads an object of OLM v0's API as unstructured (the CLI's scheme does not know OLM v0)
// and converts it into into.
func getTyped(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, key types.NamespacedName, into any) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, key, u); err != nil {
		if meta.IsNoMatchError(err) {
			return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
		}
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// listTyped lists objects of OLM v0's API in ns ("" all) into a slice of typed objects.
func listTyped[T any](ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, ns string, into *[]T, opts ...client.ListOption) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, l, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	for _, u := range l.Items {
		var t T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &t); err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
		*into = append(*into, t)
	}
	return nil
}
