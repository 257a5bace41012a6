// Package yamlalias refuses YAML documents whose aliases expand them too much ("billion laughs"),
// before any decoder expands them. catalogd's catalog walker and rukpak's manifest decoding use it.
package yamlalias

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	yamlnode "go.yaml.in/yaml/v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// YAML aliases ("*name") repeat the node an anchor ("&name") marks, so a document of a few KiB can
// stand for gigabytes ("billion laughs"). sigs.k8s.io/yaml, which every Kubernetes YAML decoder
// uses, expands them with go-yaml v2, whose guard counts nodes rather than bytes and starts late:
// 999 aliases of a 1 MiB string pass it and become 999 MiB of JSON; nested aliases cost it about
// 50 MB and 300 ms per document before it refuses. So every YAML document of a catalog or a bundle
// is checked before it is decoded: a document that can hold an alias (it names an anchor "&x" and an alias
// "*x"; two byte scans, so that documents without aliases cost nothing) is parsed without expanding
// aliases and refused when they would make it more than MaxExpansion times its size (plus
// Slack). Content written out in full is never refused: its JSON is at most about five times its YAML.

// MaxExpansion is how many times its own size a YAML document may expand to through aliases (plus
// Slack bytes).
const MaxExpansion = 10

// Slack is added to MaxExpansion times a document's size, so that tiny documents may use aliases.
const Slack = 1 << 10

// ErrExpansion is wrapped by the error of a document refused because its aliases expand it too
// much; retrying cannot help.
var ErrExpansion = errors.New("YAML aliases expand the document too much")

// jsonSniffLen is how far the Kubernetes YAML-or-JSON decoder looks for a JSON stream's opening brace.
const jsonSniffLen = 4096

type aliasExpansionError struct{ detail string }

func (e *aliasExpansionError) Error() string {
	return fmt.Sprintf("refused: its YAML aliases (*name) %s; a YAML document may expand to at most %d times its size plus %s (the guard against \"billion laughs\" documents): write the repeated content out instead of using anchors (&name) and aliases",
		e.detail, MaxExpansion, byteSize(Slack))
}

func (e *aliasExpansionError) Is(target error) bool { return target == ErrExpansion }

// Limit is the largest expansion (canonical JSON) a YAML document of size bytes may turn into.
func Limit(size int) int64 { return MaxExpansion*int64(size) + Slack }

// ExpandsTooMuch is the refusal of a document of size bytes that expands beyond Limit.
func ExpandsTooMuch(size int) error {
	return &aliasExpansionError{detail: fmt.Sprintf("expand its %s to more than %s", byteSize(int64(size)), byteSize(Limit(size)))}
}

// FromGoYAMLError turns go-yaml's own alias guard ("excessive aliasing") into the same refusal;
// other errors are returned as they are.
func FromGoYAMLError(err error) error {
	if err != nil && strings.Contains(err.Error(), "excessive aliasing") {
		return &aliasExpansionError{detail: "make up most of its nodes (go-yaml: " + err.Error() + ")"}
	}
	return err
}

// Check refuses a YAML document whose aliases would expand it beyond Limit, before anything expands
// them; the error wraps ErrExpansion. A
// document without aliases passes at the cost of two byte scans. A document with aliases that
// cannot be parsed is refused with the parse error (a YAML decoder would refuse it too).
func Check(doc []byte) error {
	if !MayHaveAliases(doc) {
		return nil
	}
	var root yamlnode.Node
	if err := yamlnode.Unmarshal(doc, &root); err != nil {
		return err
	}
	limit := Limit(len(doc))
	sz := &sizer{limit: limit, memo: map[*yamlnode.Node]int64{}}
	if sz.size(&root) > limit {
		return ExpandsTooMuch(len(doc))
	}
	return nil
}

// CheckFile runs Check on every YAML document of a file, as any Kubernetes decoder
// may cut it: at "---" lines, and, for a file that starts like JSON, also after its first JSON value
// (where the Kubernetes decoder falls back to YAML). Use it before handing a file to a decoder that
// does not check aliases itself (Decode does). A file without aliases costs two byte scans; a
// document that does not parse is left to the decoder, which refuses it.
func CheckFile(data []byte) error {
	if !MayHaveAliases(data) {
		return nil
	}
	starts := [][]byte{data}
	if utilyaml.IsJSONBuffer(data[:min(len(data), jsonSniffLen)]) {
		dec := json.NewDecoder(bytes.NewReader(data))
		var v json.RawMessage
		if dec.Decode(&v) == nil {
			starts = append(starts, data[dec.InputOffset():])
		}
	}
	for _, s := range starts {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(s)))
		for {
			doc, err := r.Read()
			if len(doc) != 0 {
				if err := Check(doc); errors.Is(err, ErrExpansion) {
					return err
				}
			}
			if err != nil {
				break // the end, or a separator a decoder refuses too
			}
		}
	}
	return nil
}

// MayHaveAliases reports whether doc can hold an alias: some name appears both as an anchor "&name"
// and as an alias "*name". go-yaml v2 spells both as the indicator and [0-9A-Za-z_-]+ followed by
// the end, a blank, a line break or one of ?:,]}%@` — with no escape that could hide them, so a false
// result is certain; a true one may be a coincidence inside a string.
func MayHaveAliases(doc []byte) bool {
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
