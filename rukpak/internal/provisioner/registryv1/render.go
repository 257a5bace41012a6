// Package registryv1 implements the core-rukpak-io-registry provisioner: it converts an OLM
// registry+v1 bundle (a ClusterServiceVersion, CRDs, other manifests and metadata/annotations.yaml)
// into the objects OLM v0 would have created for it, for the install mode that
// spec.config.watchNamespaces selects.
package registryv1

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// ProvisionerClassName is the spec.provisionerClassName this renderer serves.
const ProvisionerClassName = "core-rukpak-io-registry"

// Condition reasons of the errors Render returns (InvalidBundleError.Reason).
const (
	// ReasonInvalidBundle: the bundle itself is malformed; its author must fix it.
	ReasonInvalidBundle = "InvalidBundle"
	// ReasonUnsupportedInstallMode: spec.config.watchNamespaces selects a mode the CSV does not support.
	ReasonUnsupportedInstallMode = "UnsupportedInstallMode"
	// ReasonInvalidConfiguration: spec.config is contradictory.
	ReasonInvalidConfiguration = "InvalidConfiguration"
	// ReasonWebhooksUnsupported: the bundle has webhooks and rukpak runs without a certificate provider.
	ReasonWebhooksUnsupported = "WebhooksUnsupported"
)

// Renderer renders registry+v1 bundles.
type Renderer struct {
	certs certs.Provider
}

var (
	_ provisioner.Renderer  = (*Renderer)(nil)
	_ provisioner.Describer = (*Renderer)(nil)
)

// Option configures a Renderer.
type Option func(*Renderer)

// WithCertProvider sets the provider of webhook serving certificates. Without one, bundles that
// declare webhooks are refused with reason WebhooksUnsupported.
func WithCertProvider(p certs.Provider) Option { return func(r *Renderer) { r.certs = p } }

// New returns a registry+v1 Renderer.
func New(opts ...Option) *Renderer {
	r := &Renderer{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Render converts the bundle. The objects come in apply order: CRDs, ServiceAccounts, RBAC, the
// bundle's other manifests, webhook Services and certificates, Deployments, webhook configurations.
// Every object is *unstructured.Unstructured with apiVersion and kind set.
func (r *Renderer) Render(ctx context.Context, req provisioner.Request) ([]client.Object, error) {
	res, err := r.RenderDescribed(ctx, req)
	return res.Objects, err
}

// RenderDescribed is Render, with the install mode it used as the Result's Description (see
// InstallMode.String), e.g. "install mode OwnNamespace (default, watching operators)".
func (r *Renderer) RenderDescribed(_ context.Context, req provisioner.Request) (provisioner.Result, error) {
	objs, mode, err := r.render(req)
	if err != nil {
		var re *reasonError
		if errors.As(err, &re) {
			return provisioner.Result{}, &provisioner.InvalidBundleError{Reason: re.reason, Message: "registry+v1 bundle: " + re.msg}
		}
		var ib *provisioner.InvalidBundleError
		if errors.As(err, &ib) {
			return provisioner.Result{}, err
		}
		return provisioner.Result{}, &provisioner.InvalidBundleError{Reason: ReasonInvalidBundle, Message: "registry+v1 bundle: " + err.Error()}
	}
	return provisioner.Result{Objects: objs, Description: mode.String()}, nil
}

func (r *Renderer) render(req provisioner.Request) ([]client.Object, InstallMode, error) {
	var mode InstallMode
	if req.InstallNamespace == "" {
		return nil, mode, errors.New("installNamespace is empty")
	}
	b, err := loadBundle(req.Content)
	if err != nil {
		return nil, mode, err
	}
	var watch []string
	var overrides *deploymentOverrides
	if req.Config != nil {
		watch = req.Config.WatchNamespaces
		overrides = overridesFromAPI(req.Config.DeploymentConfig)
	}
	mode, err = resolveInstallMode(b.csv, req.InstallNamespace, watch)
	if err != nil {
		return nil, mode, err
	}
	objs, err := r.build(b, req, mode, overrides)
	return objs, mode, err
}

func (r *Renderer) build(b *bundle, req provisioner.Request, mode InstallMode, overrides *deploymentOverrides) ([]client.Object, error) {
	var olmv0 *rukpakv1alpha1.OLMv0Rendering
	if req.Config != nil {
		olmv0 = req.Config.OLMv0
	}
	deployments, err := buildDeployments(b.csv, req.InstallNamespace, mode, overrides, olmv0)
	if err != nil {
		return nil, err
	}
	prefix := req.Name
	if prefix == "" {
		prefix = b.pkg
	}
	rbac := buildRBAC(b.csv, deployments, prefix, req.InstallNamespace, mode)
	hooks, err := buildWebhooks(b.csv, deployments, b.crds, req.InstallNamespace, mode, r.certs, olmv0)
	if err != nil {
		return nil, err
	}

	others := bundleObjects(b, rbac, hooks, req.InstallNamespace)
	inBundle := map[string]bool{}
	for _, o := range others {
		inBundle[o.Obj.GetKind()+"/"+o.Obj.GetName()] = true
	}
	var sas []*corev1.ServiceAccount
	for _, sa := range rbac.serviceAccounts {
		if !inBundle["ServiceAccount/"+sa.Name] { // the bundle's own ServiceAccount wins
			sas = append(sas, sa)
		}
	}

	out := &objectList{seen: map[string]string{}}
	for _, crd := range b.crds {
		u := crd.Obj
		u.SetNamespace("")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		addAnnotations(u, hooks.crdAnnotations[u.GetName()])
		if err := out.add(u, crd.Source()); err != nil {
			return nil, err
		}
	}
	rbacGV := rbacv1.SchemeGroupVersion
	for _, err := range []error{
		addAll(out, sas, corev1.SchemeGroupVersion.WithKind("ServiceAccount")),
		addAll(out, rbac.clusterRoles, rbacGV.WithKind("ClusterRole")),
		addAll(out, rbac.clusterRoleBindings, rbacGV.WithKind("ClusterRoleBinding")),
		addAll(out, rbac.roles, rbacGV.WithKind("Role")),
		addAll(out, rbac.roleBindings, rbacGV.WithKind("RoleBinding")),
		addManifests(out, others),
		addAll(out, hooks.services, corev1.SchemeGroupVersion.WithKind("Service")),
		addProvided(out, hooks.certObjs),
		addAll(out, deployments, appsv1.SchemeGroupVersion.WithKind("Deployment")),
		addAll(out, hooks.validating, admissionGV.WithKind("ValidatingWebhookConfiguration")),
		addAll(out, hooks.mutating, admissionGV.WithKind("MutatingWebhookConfiguration")),
	} {
		if err != nil {
			return nil, err
		}
	}
	return out.objs, nil
}

var (
	admissionGV = schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}
)

// bundleObjects prepares the bundle's other manifests: namespaced ones move to the install
// namespace, ServiceAccount subjects of bindings follow the accounts, and a bundle Service with the
// name of a generated webhook Service is dropped (the generated one has the right ports).
func bundleObjects(b *bundle, rbac *rbacObjects, hooks *webhookObjects, installNamespace string) []manifest.Object {
	webhookSvcs := map[string]bool{}
	for _, s := range hooks.services {
		webhookSvcs[s.Name] = true
	}
	saNames := map[string]bool{}
	for _, sa := range rbac.serviceAccounts {
		saNames[sa.Name] = true
	}
	for _, o := range b.other {
		if gvk := o.Obj.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "ServiceAccount" {
			saNames[o.Obj.GetName()] = true
		}
	}
	scope := manifest.NewScoper(nil, nil)
	var out []manifest.Object
	for _, o := range b.other {
		u := o.Obj.DeepCopy()
		gvk := u.GroupVersionKind()
		if gvk.Group == "" && gvk.Kind == "Service" && webhookSvcs[u.GetName()] {
			continue
		}
		if scope.Namespaced(gvk) {
			u.SetNamespace(installNamespace)
		} else {
			u.SetNamespace("")
		}
		if gvk.Group == rbacv1.GroupName && (gvk.Kind == "RoleBinding" || gvk.Kind == "ClusterRoleBinding") {
			pointSubjectsAt(u, saNames, installNamespace)
		}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		out = append(out, manifest.Object{File: o.File, Index: o.Index, Obj: u})
	}
	return out
}

func addAll[T runtime.Object](l *objectList, objs []T, gvk schema.GroupVersionKind) error {
	for _, o := range objs {
		if err := l.addTyped(o, gvk, "", nil); err != nil {
			return err
		}
	}
	return nil
}

func addManifests(l *objectList, objs []manifest.Object) error {
	for _, o := range objs {
		if err := l.add(o.Obj, o.Source()); err != nil {
			return err
		}
	}
	return nil
}

// addProvided adds the certificate provider's objects.
func addProvided(l *objectList, objs []client.Object) error {
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("certificate provider returned %T, want *unstructured.Unstructured", o)
		}
		if err := l.add(u, "certificate provider"); err != nil {
			return err
		}
	}
	return nil
}

// objectList collects rendered objects and refuses two objects with the same identity.
type objectList struct {
	objs []client.Object
	seen map[string]string
}

func (l *objectList) addTyped(obj runtime.Object, gvk schema.GroupVersionKind, source string, annotations map[string]string) error {
	u, err := toUnstructured(obj, gvk)
	if err != nil {
		return err
	}
	addAnnotations(u, annotations)
	cleanTemplate(u)
	if source == "" {
		source = "generated from the ClusterServiceVersion"
	}
	return l.add(u, source)
}

func (l *objectList) add(u *unstructured.Unstructured, source string) error {
	key := fmt.Sprintf("%s/%s %s/%s", u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())
	if prev, ok := l.seen[key]; ok {
		return fmt.Errorf("%s %q (%s) is also %s; rename one of them", u.GetKind(), u.GetName(), source, prev)
	}
	l.seen[key] = source
	l.objs = append(l.objs, u)
	return nil
}

func addAnnotations(u *unstructured.Unstructured, annotations map[string]string) {
	if len(annotations) == 0 {
		return
	}
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range annotations {
		a[k] = v
	}
	u.SetAnnotations(a)
}

// cleanTemplate drops the null creationTimestamp the converter writes into pod templates.
func cleanTemplate(u *unstructured.Unstructured) {
	if u.GetKind() == "Deployment" {
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	}
}

// pointSubjectsAt makes ServiceAccount subjects of a bundle's (Cluster)RoleBinding that name a
// ServiceAccount the bundle creates (or that name no namespace) point at installNamespace, where
// that ServiceAccount lives: bundles often hard-code the namespace their author installed into.
func pointSubjectsAt(u *unstructured.Unstructured, sas map[string]bool, installNamespace string) {
	subjects, ok, _ := unstructured.NestedSlice(u.Object, "subjects")
	if !ok {
		return
	}
	for i, s := range subjects {
		m, ok := s.(map[string]any)
		if !ok || m["kind"] != rbacv1.ServiceAccountKind {
			continue
		}
		name, _ := m["name"].(string)
		if sas[name] || m["namespace"] == nil || m["namespace"] == "" {
			m["namespace"] = installNamespace
		}
		subjects[i] = m
	}
	_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
}
