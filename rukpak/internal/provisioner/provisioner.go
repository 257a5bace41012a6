// Package provisioner defines how a bundle's unpacked content becomes the Kubernetes objects rukpak
// applies. Each provisioner class (plain, registry+v1, helm, kustomize) implements Renderer; the apply
// engine and the controller only see Renderer.
//
// Rendering is two steps: Gather reads from the cluster what a Renderer says it needs (Needer: the
// documents helm valuesFrom names, the cluster's version and API versions, the scope of kinds only
// the cluster defines) into the Request, then Render turns the Request into objects without reading
// anything else. The controller and the CLI's preview (bundlerender) gather the same way, each from
// its own client.
package provisioner

import (
	"context"
	"io/fs"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Request is everything a Renderer may use: the bundle content, the BundleDeployment's settings and
// what Gather read from the cluster for it.
type Request struct {
	// Content is the unpacked bundle (the root of the image, or the directory a source names).
	Content fs.FS
	// Name is the BundleDeployment's name.
	Name string
	// InstallNamespace is where namespaced objects go (spec.installNamespace).
	InstallNamespace string
	// Config is spec.config (nil when unset).
	Config *rukpakv1alpha1.BundleConfig

	// ValuesFrom holds what Gather found for each spec.config.valuesFrom reference, in order; nil
	// when they were not gathered (no values reader), which a Renderer that needs them reports.
	ValuesFrom []ValuesDocument
	// Capabilities are the cluster's version and served API versions; nil when not gathered (the
	// helm renderer then uses Helm's defaults).
	Capabilities *Capabilities
	// Scopes says, for each kind the Renderer listed (Needs.Kinds) that the cluster serves, whether
	// its objects are namespaced. Kinds it lacks are scoped by the bundle's CRDs and the built-in
	// table of cluster-scoped kinds, or else are namespaced.
	Scopes map[schema.GroupKind]bool
}

// Renderer turns a bundle into the objects to apply. It is a pure function of its Request: it never
// reads the cluster (what it needs from there is gathered into the Request first; see Needer). Errors that a person must fix (a malformed bundle, an unsupported install mode)
// are returned as *InvalidBundleError so that the controller reports them without retrying.
type Renderer interface {
	Render(ctx context.Context, req Request) ([]client.Object, error)
}

// Result is a render's objects with what the Renderer chose and used to make them. It is all a
// render tells: a Renderer keeps nothing about a render once it returns.
type Result struct {
	// Objects are what Render returns.
	Objects []client.Object
	// Description is a short phrase for a status message, e.g. "install mode OwnNamespace (default,
	// watching operators)" for registry+v1; empty when the Renderer has nothing to say.
	Description string
	// RevisionInfo is what the render used, for the controller to record with a new revision
	// (status.history), e.g. helm's "chartVersion" and "valuesHash"; nil when the Renderer has
	// nothing to record.
	RevisionInfo map[string]string
}

// Describer is implemented by Renderers that can describe what they chose and used while rendering
// (the registry+v1 install mode, the helm chart version and values hash). RenderDescribed returns
// what Render returns, plus the description and revision info.
type Describer interface {
	RenderDescribed(ctx context.Context, req Request) (Result, error)
}

// RenderDescribed renders req with r in one pass; the Result's Description and RevisionInfo are set
// when r is a Describer and empty otherwise.
func RenderDescribed(ctx context.Context, r Renderer, req Request) (Result, error) {
	if d, ok := r.(Describer); ok {
		return d.RenderDescribed(ctx, req)
	}
	objs, err := r.Render(ctx, req)
	return Result{Objects: objs}, err
}

// InvalidBundleError is a bundle or configuration problem that retrying cannot fix.
type InvalidBundleError struct {
	// Reason is a condition reason, e.g. "InvalidBundle" or "UnsupportedInstallMode".
	Reason string
	// Message says what is wrong and how to fix it, naming the file, object or field.
	Message string
}

func (e *InvalidBundleError) Error() string { return e.Message }
