package helm

import (
	"context"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// defaultValuesKey is the key of a valuesFrom object read when the reference names none.
const defaultValuesKey = "values.yaml"

// mergeValues returns the user-supplied values: every valuesFrom document in order, then the inline
// values, each merged over the previous ones (maps merge key by key, anything else is replaced).
// The chart's own values.yaml is merged under them by Helm when rendering.
func (r *Renderer) mergeValues(ctx context.Context, req provisioner.Request) (map[string]any, error) {
	vals := map[string]any{}
	if req.Config == nil {
		return vals, nil
	}
	for i, ref := range req.Config.ValuesFrom {
		doc, terminal, err := r.readValuesFrom(ctx, req.InstallNamespace, ref)
		switch {
		case err != nil && terminal:
			return nil, invalid(ReasonInvalidValues, fmt.Sprintf("spec.config.valuesFrom[%d]: %v", i, err))
		case err != nil:
			return nil, fmt.Errorf("spec.config.valuesFrom[%d]: %w", i, err)
		}
		vals = mergeMaps(vals, doc)
	}
	if req.Config.Values != nil && len(req.Config.Values.Raw) > 0 {
		var inline map[string]any
		if err := json.Unmarshal(req.Config.Values.Raw, &inline); err != nil {
			return nil, invalid(ReasonInvalidValues, fmt.Sprintf("spec.config.values is not an object: %v", err))
		}
		vals = mergeMaps(vals, inline)
	}
	return vals, nil
}

// readValuesFrom reads one valuesFrom reference. A missing object or key is an error (retried: the
// object may be created later) unless the reference is optional; a document that is not YAML is a
// terminal error.
func (r *Renderer) readValuesFrom(ctx context.Context, namespace string, ref rukpakv1alpha1.ValuesReference) (vals map[string]any, terminal bool, err error) {
	key := ref.Key
	if key == "" {
		key = defaultValuesKey
	}
	what := fmt.Sprintf("%s %s/%s key %q", ref.Kind, namespace, ref.Name, key)
	if r.values == nil {
		return nil, true, fmt.Errorf("%s cannot be read: this rukpak was started without a values reader", what)
	}
	var (
		data  []byte
		found bool
	)
	switch ref.Kind {
	case "Secret":
		s := &corev1.Secret{}
		if err = r.values.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err == nil {
			data, found = s.Data[key]
		}
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err = r.values.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, cm); err == nil {
			var str string
			str, found = cm.Data[key]
			data = []byte(str)
			if !found {
				data, found = cm.BinaryData[key]
			}
		}
	default:
		return nil, true, fmt.Errorf("kind %q is not supported (use Secret or ConfigMap)", ref.Kind)
	}
	switch {
	case apierrors.IsNotFound(err) && ref.Optional, err == nil && !found && ref.Optional:
		return map[string]any{}, false, nil
	case apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("%s does not exist: create it in the install namespace or mark the reference optional", what)
	case err != nil:
		return nil, false, fmt.Errorf("reading %s: %w", what, err)
	case !found:
		return nil, false, fmt.Errorf("%s has no such key: add it or mark the reference optional", what)
	}
	vals, err = chartutil.ReadValues(data)
	if err != nil {
		return nil, true, fmt.Errorf("%s is not a YAML map of Helm values: %v", what, err)
	}
	return vals, false, nil
}

// mergeMaps returns over merged onto base: nested maps merge key by key, other values of over
// replace those of base. Neither argument is modified.
func mergeMaps(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(bm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
