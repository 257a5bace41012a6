// Package plain implements the core-rukpak-io-plain provisioner: every manifest under the bundle's
// manifests/ directory is applied as it is, namespaced objects without a namespace going to the
// BundleDeployment's installNamespace.
//
// A kind's scope comes from a CRD in the bundle, else from the cluster (the kinds of Needs.Kinds,
// gathered into Request.Scopes before the render), else from the built-in table of cluster-scoped
// kinds; a kind none of them knows is namespaced.
package plain

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// ReasonInvalidBundle is the InvalidBundleError.Reason of every plain bundle problem.
const ReasonInvalidBundle = "InvalidBundle"

// ProvisionerClassName is the spec.provisionerClassName this renderer serves.
const ProvisionerClassName = "core-rukpak-io-plain"

// ManifestsDir is the directory of a plain bundle that holds its manifests.
const ManifestsDir = "manifests"

// Renderer renders plain bundles.
type Renderer struct{}

var (
	_ provisioner.Renderer = (*Renderer)(nil)
	_ provisioner.Needer   = (*Renderer)(nil)
)

// Option configures a Renderer.
type Option func(*Renderer)

// New returns a plain Renderer.
func New(opts ...Option) *Renderer {
	r := &Renderer{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Needs says that a render reads the scope of the bundle's kinds that only the cluster knows
// (custom resources of CRDs that someone else installed).
func (*Renderer) Needs() provisioner.Needs { return provisioner.Needs{Kinds: clusterKinds} }

// clusterKinds lists the kinds under manifests/ whose scope only the cluster can tell; none when
// the bundle cannot be read (Render reports that).
func clusterKinds(req provisioner.Request) []schema.GroupVersionKind {
	objs, err := manifest.ReadDir(req.Content, ManifestsDir)
	if err != nil {
		return nil
	}
	return manifest.ClusterKinds(unstructureds(objs))
}

func unstructureds(objs []manifest.Object) []*unstructured.Unstructured {
	us := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		us = append(us, o.Obj)
	}
	return us
}

// Render decodes every YAML/JSON document under manifests/ (in lexical file order, then document
// order). Namespaced objects without metadata.namespace get req.InstallNamespace; cluster-scoped
// objects must not name a namespace. Two documents naming the same object are an error.
func (*Renderer) Render(_ context.Context, req provisioner.Request) ([]client.Object, error) {
	objs, err := manifest.ReadDir(req.Content, ManifestsDir)
	if err != nil {
		return nil, invalid(err.Error())
	}
	if len(objs) == 0 {
		return nil, invalid(fmt.Sprintf("plain bundle has no objects: %s/ holds no YAML or JSON documents", ManifestsDir))
	}
	scope := manifest.NewScoper(unstructureds(objs), req.Scopes)
	seen := map[string]string{}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		u := o.Obj
		if scope.Namespaced(u.GroupVersionKind()) {
			if u.GetNamespace() == "" {
				if req.InstallNamespace == "" {
					return nil, invalid(fmt.Sprintf("%s: %s %q has no namespace and installNamespace is empty; set spec.installNamespace",
						o.Source(), u.GetKind(), u.GetName()))
				}
				u.SetNamespace(req.InstallNamespace)
			}
		} else if u.GetNamespace() != "" {
			return nil, invalid(fmt.Sprintf("%s: %s %q is cluster-scoped but sets metadata.namespace %q; remove the namespace",
				o.Source(), u.GetKind(), u.GetName(), u.GetNamespace()))
		}
		key := fmt.Sprintf("%s/%s %s/%s", u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())
		if prev, dup := seen[key]; dup {
			return nil, invalid(fmt.Sprintf("%s: %s %q is also declared in %s; each object may appear once",
				o.Source(), u.GetKind(), u.GetName(), prev))
		}
		seen[key] = o.Source()
		out = append(out, u)
	}
	return out, nil
}

func invalid(msg string) error {
	return &provisioner.InvalidBundleError{Reason: ReasonInvalidBundle, Message: "plain bundle: " + msg}
}
