package preview

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// objectDiff is a unified diff of two versions of an object as YAML, without what the API server
// maintains (status, managedFields, resourceVersion, generation, creationTimestamp, uid): what a
// write would change. "" means no change. title names the object in the diff's header.
func objectDiff(before, after *unstructured.Unstructured, title string) (string, error) {
	a, err := diffYAML(before)
	if err != nil {
		return "", err
	}
	b, err := diffYAML(after)
	if err != nil {
		return "", err
	}
	if a == b {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(strings.TrimSuffix(a, "\n")), B: difflib.SplitLines(strings.TrimSuffix(b, "\n")),
		FromFile: title + " (live)", ToFile: title + " (after)", Context: 3,
	})
}

// diffYAML is u as YAML without the fields the API server maintains.
func diffYAML(u *unstructured.Unstructured) (string, error) {
	if u == nil {
		return "", nil
	}
	data, err := yaml.Marshal(withoutServerFields(u).Object)
	if err != nil {
		return "", fmt.Errorf("encoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return string(data), nil
}

// withoutServerFields is a copy of u without what the API server maintains: status, managedFields,
// resourceVersion, generation, creationTimestamp and uid.
func withoutServerFields(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "creationTimestamp", "uid"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	if md, ok := c.Object["metadata"].(map[string]any); ok && len(md) == 0 {
		delete(c.Object, "metadata")
	}
	return c
}
