// Package v0fixture puts into a cluster what OLM v0 leaves there after installing a registry+v1
// bundle, for the tests of kubectl olmv1 migrate (OLM v0 itself cannot be built or run here).
//
// Install writes, from the bundle directory's CSV and CRDs, what OLM v0's controllers write: the
// CatalogSource, the OperatorGroup (with the namespaces it resolved in its status), the Subscription
// (status.installedCSV), the CSV (annotated by the OperatorGroup, phase Succeeded), the CRDs, the
// ServiceAccounts, the RBAC under OLM v0's generated names, and the Deployments with the pod
// template OLM v0 computes (the CSV's annotations copied onto it, Subscription.spec.config applied,
// OPERATOR_CONDITION_NAME injected, revisionHistoryLimit 1), and for webhooks the certificate
// resources and webhook configurations (webhooks.go) — every object with OLM v0's
// ownerReferences (to the CSV, neither controller nor blocking) and labels (olm.owner,
// olm.owner.kind, olm.owner.namespace, operators.coreos.com/<package>.<namespace>). docs/migration.md
// lists the parts of OLM v0's source each of these comes from. Writes use OLM v0's field managers.
package v0fixture

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	webhookSpecs, err := installWebhooks(ctx, c, csv, owner, ownerLabels)
	if err != nil {
		return nil, err
	}
	out := &Installed{CSV: csv}
	for _, spec := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		if ws, ok := webhookSpecs[spec.Name]; ok {
			spec.Spec = ws
		}
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
