package manifest

import "github.com/olmv1/olmv1/platform/yamlalias"

// The alias guard of every YAML document of a bundle (see package yamlalias).

// MaxAliasExpansion is how many times its own size a YAML document may expand to through aliases.
const MaxAliasExpansion = yamlalias.MaxExpansion

// ErrAliasExpansion is wrapped by the error of a document refused because its aliases expand it
// too much; retrying cannot help.
var ErrAliasExpansion = yamlalias.ErrExpansion

// CheckAliases refuses a YAML document whose aliases would expand it too much (yamlalias.Check).
func CheckAliases(doc []byte) error { return yamlalias.Check(doc) }

// CheckFileAliases checks every YAML document of a file as a Kubernetes decoder may cut it
// (yamlalias.CheckFile).
func CheckFileAliases(data []byte) error { return yamlalias.CheckFile(data) }

func mayHaveAliases(doc []byte) bool { return yamlalias.MayHaveAliases(doc) }
