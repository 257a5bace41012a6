package fbc

import (
	"errors"

	"github.com/olmv1/olmv1/platform/yamlalias"
)

// YAML aliases ("*name") repeat the node that an anchor ("&name") marks, so a document of a few KiB
// can stand for gigabytes ("billion laughs"). go-yaml's own guard refuses a document only when most
// of its decoded nodes come from aliases, only past a thousand nodes, and only after it has built
// up to about 400,000 nodes (50 MB and 300 ms per document); and it counts nodes, not bytes: 999
// aliases of a 1 MiB string decode into a few MB of Go values but into 999 MiB of JSON.
//
// walkMetas therefore refuses (package yamlalias) a YAML document whose aliases make it more than maxExpansion times
// its own size (plus expansionSlack), before go-yaml expands anything: a document that can hold an
// alias (it names an anchor "&x" and an alias "*x": checked with two byte scans, so the documents
// of real catalogs, which have none, cost nothing) is parsed without expanding aliases and its
// expanded size computed. Content written out in full is never refused: its JSON is at most about
// five times its YAML. The canonical JSON encoding is also bounded (see jsonable), in case that
// parser and go-yaml ever disagree on a document.

// maxExpansion bounds the canonical JSON of a YAML document: at most maxExpansion times the
// document's size plus yamlalias.Slack bytes.
const maxExpansion = yamlalias.MaxExpansion

// errAliasExpansion marks the refusal of a document whose aliases expand it too much.
var errAliasExpansion = yamlalias.ErrExpansion

// expansionLimit is the largest canonical JSON a YAML document of size bytes may turn into.
func expansionLimit(size int) int64 { return yamlalias.Limit(size) }

// checkAliases refuses doc when its aliases expand it beyond expansionLimit. It returns nil for a
// document without aliases and for one it cannot parse (go-yaml then reports the syntax error, and
// jsonable's budget still bounds the result).
func checkAliases(doc []byte) error {
	if err := yamlalias.Check(doc); errors.Is(err, errAliasExpansion) {
		return err
	}
	return nil
}

// expandsTooMuch is the refusal of a document of size bytes that expands beyond expansionLimit.
func expandsTooMuch(size int) error { return yamlalias.ExpandsTooMuch(size) }

// fromGoYAMLError turns go-yaml's own alias guard into the same refusal; other errors are kept.
func fromGoYAMLError(err error) error { return yamlalias.FromGoYAMLError(err) }

func mayHaveAliases(doc []byte) bool { return yamlalias.MayHaveAliases(doc) }
