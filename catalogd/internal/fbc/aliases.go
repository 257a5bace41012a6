package fbc

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	yamlnode "go.yaml.in/yaml/v3"
)

// YAML aliases ("*name") repeat the node that an anchor ("&name") marks, so a document of a few KiB
// can stand for gigabytes ("billion laughs"). go-yaml's own guard refuses a document only when most
// of its decoded nodes come from aliases, only past a thousand nodes, and only after it has built
// up to about 400,000 nodes (50 MB and 300 ms per document); and it counts nodes, not bytes: 999
// aliases of a 1 MiB string decode into a few MB of Go values but into 999 MiB of JSON.
//
// walkMetas therefore refuses a YAML document whose aliases make it more than maxExpansion times
// its own size (plus expansionSlack), before go-yaml expands anything: a document that can hold an
// alias (it names an anchor "&x" and an alias "*x": checked with two byte scans, so the documents
// of real catalogs, which have none, cost nothing) is parsed without expanding aliases and its
// expanded size computed. Content written out in full is never refused: its JSON is at most about
// five times its YAML. The canonical JSON encoding is also bounded (see jsonable), in case that
// parser and go-yaml ever disagree on a document.

// maxExpansion and expansionSlack bound the canonical JSON of a YAML document: at most
// maxExpansion times the document's size plus expansionSlack bytes.
const (
	maxExpansion   = 10
	expansionSlack = 1 << 10
)

// errAliasExpansion marks the refusal of a document whose aliases expand it too much.
var errAliasExpansion = errors.New("YAML aliases expand the document too much")

// aliasExpansionError says which document was refused and why.
type aliasExpansionError struct {
	detail string // what exceeded the bound
}

func (e *aliasExpansionError) Error() string {
	return fmt.Sprintf("refused: its YAML aliases (*name) %s; a YAML document may expand to at most %d times its size plus %s (the guard against \"billion laughs\" documents): write the repeated content out instead of using anchors (&name) and aliases",
		e.detail, maxExpansion, byteSize(expansionSlack))
}

func (e *aliasExpansionError) Is(target error) bool { return target == errAliasExpansion }

// expansionLimit is the largest canonical JSON a YAML document of size bytes may turn into.
func expansionLimit(size int) int64 { return maxExpansion*int64(size) + expansionSlack }

// checkAliases refuses doc when its aliases expand it beyond expansionLimit. It returns nil for a
// document without aliases and for one it cannot parse (go-yaml then reports the syntax error, and
// jsonable's budget still bounds the result).
func checkAliases(doc []byte) error {
	if !mayHaveAliases(doc) {
		return nil
	}
	var root yamlnode.Node
	if err := yamlnode.Unmarshal(doc, &root); err != nil {
		return nil
	}
	limit := expansionLimit(len(doc))
	sz := &sizer{limit: limit, memo: map[*yamlnode.Node]int64{}}
	if n := sz.size(&root); n > limit {
		return expandsTooMuch(len(doc))
	}
	return nil
}

// expandsTooMuch is the refusal of a document of size bytes that expands beyond expansionLimit.
func expandsTooMuch(size int) error {
	return &aliasExpansionError{detail: fmt.Sprintf("expand its %s to more than %s", byteSize(int64(size)), byteSize(expansionLimit(size)))}
}

// fromGoYAMLError turns go-yaml's own alias guard into the same refusal; other errors are kept.
func fromGoYAMLError(err error) error {
	if err != nil && strings.Contains(err.Error(), "excessive aliasing") {
		return &aliasExpansionError{detail: "make up most of its nodes (go-yaml: " + err.Error() + ")"}
	}
	return err
}

// mayHaveAliases reports whether doc can hold an alias: some name appears both as an anchor "&name"
// and as an alias "*name". go-yaml spells both as the indicator and [0-9A-Za-z_-]+ followed by the
// end, a blank, a line break or one of ?:,]}%@` — with no escape that could hide them, so a false
// result is certain; a true one may be a coincidence inside a string.
func mayHaveAliases(doc []byte) bool {
	anchors := map[string]struct{}{}
	eachName(doc, '&', func(name string) bool {
		anchors[name] = struct{}{}
		return true
	})
	if len(anchors) == 0 {
		return false
	}
	found := false
	eachName(doc, '*', func(name string) bool {
		_, found = anchors[name]
		return !found
	})
	return found
}

// nameEnds are the bytes that may follow an anchor or alias name for go-yaml (NEL, LS and PS, line
// breaks too, start with 0xc2 and 0xe2).
const nameEnds = " \t\r\n\x00?:,]}%@`\xc2\xe2"

// eachName calls fn with every name that follows indicator in doc, until fn returns false.
func eachName(doc []byte, indicator byte, fn func(string) bool) {
	for i := 0; ; {
		j := bytes.IndexByte(doc[i:], indicator)
		if j < 0 {
			return
		}
		start := i + j + 1
		end := start
		for end < len(doc) && isAnchorChar(doc[end]) {
			end++
		}
		i = end
		if end == start || end < len(doc) && strings.IndexByte(nameEnds, doc[end]) < 0 {
			continue
		}
		if !fn(string(doc[start:end])) {
			return
		}
	}
}

func isAnchorChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-'
}

// sizer estimates the size of the JSON a node tree expands to, counting every alias as a copy of
// its anchor's node, and stops counting past limit.
type sizer struct {
	limit int64
	// memo holds the size of anchored nodes; -1 while one is being measured (an anchor used inside
	// itself, which go-yaml refuses).
	memo map[*yamlnode.Node]int64
}

func (s *sizer) size(n *yamlnode.Node) int64 {
	if n == nil {
		return 0
	}
	if n.Kind == yamlnode.AliasNode {
		return s.size(n.Alias)
	}
	if n.Anchor != "" {
		if v, ok := s.memo[n]; ok {
			return max(v, 0)
		}
		s.memo[n] = -1
	}
	var total int64
	switch n.Kind {
	case yamlnode.ScalarNode:
		total = int64(len(n.Value)) + 2
	case yamlnode.DocumentNode, yamlnode.SequenceNode, yamlnode.MappingNode:
		total = 2
		for _, c := range n.Content {
			total += s.size(c) + 1
			if total > s.limit {
				break
			}
		}
	}
	total = min(total, s.limit+1)
	if n.Anchor != "" {
		s.memo[n] = total
	}
	return total
}

// byteSize formats n for messages: "512 B", "1.0 KiB", "3.2 MiB".
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
