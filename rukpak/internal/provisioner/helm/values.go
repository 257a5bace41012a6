package helm

import (
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// mergeValues returns the user-supplied values: every valuesFrom document in order, then the inline
// values, each merged over the previous ones (maps merge key by key, anything else is replaced).
// The chart's own values.yaml is merged under them by Helm when rendering.
func mergeValues(req provisioner.Request) (map[string]any, error) {
	vals := map[string]any{}
	if req.Config == nil {
		return vals, nil
	}
	for i, ref := range req.Config.ValuesFrom {
		doc, terminal, err := valuesFrom(req, i, ref)
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

// valuesFrom reads the values of reference i from what was gathered for it (req.ValuesFrom). A
// missing object or key is an error (retried: the object may be created later) unless the
// reference is optional; a document that is not YAML, or references that were not gathered, are
// terminal errors.
func valuesFrom(req provisioner.Request, i int, ref rukpakv1alpha1.ValuesReference) (vals map[string]any, terminal bool, err error) {
	what := provisioner.ValuesSource(req.InstallNamespace, ref)
	if i >= len(req.ValuesFrom) {
		return nil, true, fmt.Errorf("%s cannot be read: this rukpak was started without a values reader", what)
	}
	if ref.Kind != "Secret" && ref.Kind != "ConfigMap" {
		return nil, true, fmt.Errorf("kind %q is not supported (use Secret or ConfigMap)", ref.Kind)
	}
	doc := req.ValuesFrom[i]
	switch {
	case !doc.Found && ref.Optional:
		return map[string]any{}, false, nil
	case !doc.Exists:
		return nil, false, fmt.Errorf("%s does not exist: create it in the install namespace or mark the reference optional", what)
	case !doc.Found:
		return nil, false, fmt.Errorf("%s has no such key: add it or mark the reference optional", what)
	}
	vals, err = chartutil.ReadValues(doc.Data)
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
