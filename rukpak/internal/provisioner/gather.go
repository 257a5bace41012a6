package provisioner

// Gathering: before a render, what the Renderer needs from the cluster is read into its Request, so
// that Render itself never reads the cluster.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Needs are the cluster facts a Renderer reads from its Request.
type Needs struct {
	// ValuesFrom: Request.ValuesFrom, the documents spec.config.valuesFrom names.
	ValuesFrom bool
	// Capabilities: Request.Capabilities, the cluster's version and served API versions.
	Capabilities bool
	// Kinds, when set, lists the kinds of req's bundle whose scope only the cluster can tell (a
	// custom resource of a CRD that someone else installed); Gather puts their scopes in
	// Request.Scopes. For a bundle it cannot read it returns nothing: Render reports the problem.
	Kinds func(req Request) []schema.GroupVersionKind
}

// Needer is implemented by Renderers that use cluster facts. Gather leaves the Request of any other
// Renderer as it is.
type Needer interface {
	Needs() Needs
}

// Gatherer reads the cluster facts Renderers need. Each source is optional: without it that fact is
// not gathered, as if the cluster had nothing to say.
type Gatherer struct {
	// Values reads the Secrets and ConfigMaps spec.config.valuesFrom names, in the install
	// namespace. It should read the API server directly (rukpak's cache holds only the objects it
	// installed). Without it a render that needs them fails, saying so.
	Values client.Reader
	// Capabilities gives the cluster's version and API versions (DiscoveryCapabilities). Without it
	// the helm renderer uses Helm's defaults.
	Capabilities CapabilitiesFunc
	// Mapper tells the scope of the kinds the cluster serves (the controller's cached RESTMapper).
	// Without it kinds that neither the bundle nor the built-in table scope are namespaced.
	Mapper meta.RESTMapper
}

// Gather returns req with what r needs from the cluster filled in; a nil Gatherer gathers nothing.
// A reference to something that does not exist is no error (the ValuesDocument says so, and Render
// reports it where it matters); an error is a read that failed and may succeed later.
func (g *Gatherer) Gather(ctx context.Context, r Renderer, req Request) (Request, error) {
	n, ok := r.(Needer)
	if g == nil || !ok {
		return req, nil
	}
	needs := n.Needs()
	if needs.ValuesFrom && g.Values != nil && req.Config != nil && len(req.Config.ValuesFrom) > 0 {
		docs, err := g.valuesFrom(ctx, req.InstallNamespace, req.Config.ValuesFrom)
		if err != nil {
			return req, err
		}
		req.ValuesFrom = docs
	}
	if needs.Capabilities && g.Capabilities != nil {
		caps, err := g.Capabilities(ctx)
		if err != nil {
			return req, fmt.Errorf("discovering the cluster's version and API versions for .Capabilities: %w", err)
		}
		req.Capabilities = caps
	}
	if needs.Kinds != nil && g.Mapper != nil {
		req.Scopes = g.Scopes(needs.Kinds(req))
	}
	return req, nil
}

// Scopes looks kinds up in the Mapper: for each the cluster serves, whether its objects are
// namespaced. Kinds it does not serve are left out; without a Mapper the answer is nil.
func (g *Gatherer) Scopes(kinds []schema.GroupVersionKind) map[schema.GroupKind]bool {
	if g == nil || g.Mapper == nil || len(kinds) == 0 {
		return nil
	}
	out := map[schema.GroupKind]bool{}
	for _, gvk := range kinds {
		if _, done := out[gvk.GroupKind()]; done {
			continue
		}
		if m, err := g.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			out[gvk.GroupKind()] = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
	}
	return out
}

// ValuesDocument is what Gather found for one spec.config.valuesFrom reference.
type ValuesDocument struct {
	// Exists: the Secret or ConfigMap exists.
	Exists bool
	// Found: it holds the reference's key (ValuesKey).
	Found bool
	// Data is that key's content (of a ConfigMap: data, else binaryData).
	Data []byte
}

// DefaultValuesKey is the key of a valuesFrom object read when the reference names none.
const DefaultValuesKey = "values.yaml"

// ValuesKey is the key ref reads.
func ValuesKey(ref rukpakv1alpha1.ValuesReference) string {
	if ref.Key == "" {
		return DefaultValuesKey
	}
	return ref.Key
}

// ValuesSource names what ref reads in namespace, for messages: `Secret ns/name key "values.yaml"`.
func ValuesSource(namespace string, ref rukpakv1alpha1.ValuesReference) string {
	return fmt.Sprintf("%s %s/%s key %q", ref.Kind, namespace, ref.Name, ValuesKey(ref))
}

func (g *Gatherer) valuesFrom(ctx context.Context, namespace string, refs []rukpakv1alpha1.ValuesReference) ([]ValuesDocument, error) {
	docs := make([]ValuesDocument, len(refs))
	for i, ref := range refs {
		doc, err := readValues(ctx, g.Values, namespace, ref)
		if err != nil {
			return nil, fmt.Errorf("spec.config.valuesFrom[%d]: reading %s: %w", i, ValuesSource(namespace, ref), err)
		}
		docs[i] = doc
	}
	return docs, nil
}

// readValues reads the key ref names. A kind other than Secret or ConfigMap reads nothing (the
// renderer refuses it).
func readValues(ctx context.Context, c client.Reader, namespace string, ref rukpakv1alpha1.ValuesReference) (ValuesDocument, error) {
	key, name := ValuesKey(ref), client.ObjectKey{Namespace: namespace, Name: ref.Name}
	var (
		doc ValuesDocument
		err error
	)
	switch ref.Kind {
	case "Secret":
		s := &corev1.Secret{}
		if err = c.Get(ctx, name, s); err == nil {
			doc.Data, doc.Found = s.Data[key]
		}
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err = c.Get(ctx, name, cm); err == nil {
			var str string
			if str, doc.Found = cm.Data[key]; doc.Found {
				doc.Data = []byte(str)
			} else {
				doc.Data, doc.Found = cm.BinaryData[key]
			}
		}
	default:
		return ValuesDocument{}, nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return ValuesDocument{}, nil
	case err != nil:
		return ValuesDocument{}, err
	}
	doc.Exists = true
	return doc, nil
}
