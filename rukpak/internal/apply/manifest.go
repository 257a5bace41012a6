package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// Labels that rukpak sets on every object it applies. The manager's cache and the drift-correction
// watches select on OwnerKindLabel, so rukpak only ever watches what it applied.
const (
	OwnerKindLabel = "core.rukpak.io/owner-kind"
	OwnerNameLabel = "core.rukpak.io/owner-name"
	// OwnerKind is the value of OwnerKindLabel on objects applied for a BundleDeployment.
	OwnerKind = "BundleDeployment"
)

// OwnerLabels are the labels set on every object applied for the BundleDeployment named owner.
func OwnerLabels(owner string) map[string]string {
	return map[string]string{OwnerKindLabel: OwnerKind, OwnerNameLabel: owner}
}

// ObjectKey identifies an applied object across revisions.
type ObjectKey struct {
	Group, Kind, Namespace, Name string
}

func (k ObjectKey) String() string {
	gk := k.Kind
	if k.Group != "" {
		gk += "." + k.Group
	}
	if k.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", gk, k.Namespace, k.Name)
	}
	return fmt.Sprintf("%s %s", gk, k.Name)
}

// KeyOf returns the ObjectKey of u.
func KeyOf(u *unstructured.Unstructured) ObjectKey {
	gvk := u.GroupVersionKind()
	return ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// toUnstructured converts rendered objects (typed or unstructured) into unstructured copies with
// their GroupVersionKind set, cluster-assigned metadata removed and the owner labels added.
func toUnstructured(scheme *runtime.Scheme, owner string, objs []client.Object) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	seen := map[ObjectKey]bool{}
	for _, obj := range objs {
		u := &unstructured.Unstructured{}
		if in, ok := obj.(*unstructured.Unstructured); ok {
			u = in.DeepCopy()
		} else {
			gvk, err := apiutil.GVKForObject(obj, scheme)
			if err != nil {
				return nil, fmt.Errorf("object %q of type %T: %w", obj.GetName(), obj, err)
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return nil, fmt.Errorf("converting %s %q: %w", gvk.Kind, obj.GetName(), err)
			}
			u.SetUnstructuredContent(m)
			u.SetGroupVersionKind(gvk)
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("rendered object %q has no apiVersion, kind or name", u.GetName())
		}
		for _, f := range [][]string{
			{"metadata", "resourceVersion"}, {"metadata", "uid"}, {"metadata", "creationTimestamp"},
			{"metadata", "generation"}, {"metadata", "managedFields"}, {"metadata", "selfLink"}, {"status"},
		} {
			unstructured.RemoveNestedField(u.Object, f...)
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range OwnerLabels(owner) {
			labels[k] = v
		}
		u.SetLabels(labels)
		k := KeyOf(u)
		if seen[k] {
			return nil, fmt.Errorf("the bundle renders %s twice", k)
		}
		seen[k] = true
		out = append(out, u)
	}
	return out, nil
}

// applyOrder sorts objects so that what others depend on comes first: CRDs, namespaces, RBAC and
// service accounts, then everything else; ties are broken by kind, namespace and name so that the
// manifest of the same content is always the same string.
func applyOrder(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if ra, rb := kindRank(a.GroupVersionKind()), kindRank(b.GroupVersionKind()); ra != rb {
			return ra < rb
		}
		ka, kb := KeyOf(a), KeyOf(b)
		if ka.Group != kb.Group {
			return ka.Group < kb.Group
		}
		if ka.Kind != kb.Kind {
			return ka.Kind < kb.Kind
		}
		if ka.Namespace != kb.Namespace {
			return ka.Namespace < kb.Namespace
		}
		return ka.Name < kb.Name
	})
}

func kindRank(gvk schema.GroupVersionKind) int {
	switch gvk.Kind {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	case "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding":
		return 2
	case "ConfigMap", "Secret", "Service":
		return 3
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		return 5
	}
	return 4
}

// manifestDigest is "sha256:<hex>" of the objects' JSON, in apply order: it decides whether a
// rendering differs from the deployed revision without encoding YAML on every reconcile.
func manifestDigest(objs []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	for _, u := range objs {
		j, err := json.Marshal(u.Object)
		if err != nil {
			return "", fmt.Errorf("encoding %s: %w", KeyOf(u), err)
		}
		h.Write(j)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// encodeManifest is the release manifest: the objects as YAML documents, in apply order.
func encodeManifest(objs []*unstructured.Unstructured) (string, error) {
	var b strings.Builder
	for _, u := range objs {
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return "", fmt.Errorf("encoding %s: %w", KeyOf(u), err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String(), nil
}

// decodeManifest parses a release manifest back into objects.
func decodeManifest(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding a stored release manifest: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}
