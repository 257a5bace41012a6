package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// The Widget API. v1 (the storage version) names the size spec.size; v2 names the same value
// spec.replicas. Everything else, status included, is the same in both.
const (
	Group       = "widgets.olmv1.io"
	Kind        = "Widget"
	APIVersion1 = Group + "/v1"
	APIVersion2 = Group + "/v2"

	// MinSize and MaxSize bound spec.size (spec.replicas in v2); the validating webhook refuses others.
	MinSize = 0
	MaxSize = 10
	// DefaultSize is what the mutating webhook sets when the size is absent.
	DefaultSize = 1
	// DefaultedLabel is the label the mutating webhook sets to "true" on every Widget it admits.
	DefaultedLabel = "widgets.olmv1.io/defaulted"
	// PhaseReconciled is status.phase once the operator has written the status.
	PhaseReconciled = "Reconciled"
)

// sizeField is the name, under spec, of the size in apiVersion.
func sizeField(apiVersion string) (string, error) {
	switch apiVersion {
	case APIVersion1:
		return "size", nil
	case APIVersion2:
		return "replicas", nil
	}
	return "", fmt.Errorf("widget-operator: apiVersion %q is not a Widget version (serve %s or %s)", apiVersion, APIVersion1, APIVersion2)
}

// decodeObject parses a JSON object keeping numbers as json.Number, so that they pass through
// conversion unchanged.
func decodeObject(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("widget-operator: the object is not JSON: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("widget-operator: the object is empty")
	}
	return obj, nil
}

// convertWidget returns a copy of obj converted to apiVersion `to`: the size moves between spec.size
// (v1) and spec.replicas (v2), apiVersion is set, and every other field is kept.
func convertWidget(obj map[string]any, to string) (map[string]any, error) {
	from, _ := obj["apiVersion"].(string)
	fromField, err := sizeField(from)
	if err != nil {
		return nil, err
	}
	toField, err := sizeField(to)
	if err != nil {
		return nil, err
	}
	out := runtime.DeepCopyJSON(obj)
	out["apiVersion"] = to
	if spec, ok := out["spec"].(map[string]any); ok && fromField != toField {
		if v, ok := spec[fromField]; ok {
			delete(spec, fromField)
			spec[toField] = v
		}
	}
	return out, nil
}

// validateWidget returns the reason to refuse obj, or nil: its size must be an integer from MinSize
// to MaxSize. An absent size is allowed (the mutating webhook defaults it).
func validateWidget(obj map[string]any) error {
	apiVersion, _ := obj["apiVersion"].(string)
	field, err := sizeField(apiVersion)
	if err != nil {
		return err
	}
	spec, _ := obj["spec"].(map[string]any)
	v, ok := spec[field]
	if !ok || v == nil {
		return nil
	}
	n, ok := asInt(v)
	if !ok {
		return fmt.Errorf("widget-operator: spec.%s must be an integer between %d and %d, got %v", field, MinSize, MaxSize, v)
	}
	if n < MinSize || n > MaxSize {
		return fmt.Errorf("widget-operator: spec.%s must be between %d and %d, got %d", field, MinSize, MaxSize, n)
	}
	return nil
}

// patchOp is one RFC 6902 JSON Patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// defaultWidget returns the JSON Patch that sets DefaultedLabel to "true" and the size to DefaultSize
// when it is absent; it is empty when obj needs neither.
func defaultWidget(obj map[string]any) ([]patchOp, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	field, err := sizeField(apiVersion)
	if err != nil {
		return nil, err
	}
	var ops []patchOp
	meta, _ := obj["metadata"].(map[string]any)
	labels, hasLabels := meta["labels"].(map[string]any)
	switch {
	case meta == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata", Value: map[string]any{"labels": map[string]any{DefaultedLabel: "true"}}})
	case !hasLabels:
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels", Value: map[string]any{DefaultedLabel: "true"}})
	case labels[DefaultedLabel] != "true":
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels/" + escapePointer(DefaultedLabel), Value: "true"})
	}
	spec, hasSpec := obj["spec"].(map[string]any)
	switch {
	case !hasSpec:
		ops = append(ops, patchOp{Op: "add", Path: "/spec", Value: map[string]any{field: DefaultSize}})
	case spec[field] == nil:
		ops = append(ops, patchOp{Op: "add", Path: "/spec/" + field, Value: DefaultSize})
	}
	return ops, nil
}

// escapePointer escapes a key for a JSON Pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// desiredStatus is the status the operator writes for a Widget (read as the storage version, v1).
func desiredStatus(obj map[string]any, operatorVersion string) map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	size, ok := asInt(spec["size"])
	msg := fmt.Sprintf("widget-operator %s reconciled size %d", operatorVersion, size)
	if !ok {
		msg = fmt.Sprintf("widget-operator %s reconciled a widget without spec.size (is the mutating webhook installed?)", operatorVersion)
	}
	meta, _ := obj["metadata"].(map[string]any)
	generation, _ := asInt(meta["generation"])
	return map[string]any{
		"observedSize":       size,
		"observedGeneration": generation,
		"phase":              PhaseReconciled,
		"operatorVersion":    operatorVersion,
		"message":            msg,
	}
}

// asInt reads an integer as JSON decoders leave it: json.Number, int64 (Kubernetes' unstructured
// decoding), float64 (encoding/json) or int.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}
