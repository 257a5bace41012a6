package fbc

import (
	"testing"

	yamlnode "go.yaml.in/yaml/v3"
)

// FuzzMayHaveAliases: the fast path of the alias check never misses an alias. Whenever a YAML
// parser that keeps aliases as nodes (yaml.v3) finds an alias whose name go-yaml v2, the decoder
// that expands them, also accepts, mayHaveAliases must say the document may hold aliases; and
// checkAliases returns on any input.
func FuzzMayHaveAliases(f *testing.F) {
	for _, s := range []string{
		"a: &x 1\nb: *x\n",
		"{a: &x [1, 2], b: [*x, *x]}",
		"a: &x {k: v}\nb: {<<: *x}\n",
		"- &a x\n- *a\n",
		"? &k key\n: *k\n",
		"a: !!str &x 1\nb: *x\n",
		"a: &x 1\nb: *x\u2028c: 2\n",
		"a: &x\n  - 1\nb: [*x,*x]\n",
		nestedAliases(3, 3),
		"d: \"**bold** R&D &amp;\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_ = checkAliases(doc)
		var root yamlnode.Node
		if yamlnode.Unmarshal(doc, &root) != nil {
			return
		}
		if name, ok := findAlias(&root); ok && !mayHaveAliases(doc) {
			t.Fatalf("mayHaveAliases misses alias *%s in %q", name, doc)
		}
	})
}

// findAlias returns the name of an alias of the tree that go-yaml v2 would also read as one.
func findAlias(n *yamlnode.Node) (string, bool) {
	if n.Kind == yamlnode.AliasNode && n.Value != "" && isAnchorName(n.Value) {
		return n.Value, true
	}
	for _, c := range n.Content {
		if name, ok := findAlias(c); ok {
			return name, true
		}
	}
	return "", false
}

func isAnchorName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAnchorChar(s[i]) {
			return false
		}
	}
	return true
}

// isAnchorChar: go-yaml v2 spells anchor and alias names with [0-9A-Za-z_-].
func isAnchorChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '-'
}
