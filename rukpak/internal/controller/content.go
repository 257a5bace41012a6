package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// ContentHash is "sha256:<hex>" over the paths, modes and contents of every regular file in fsys, in
// lexical order: the same content hashes the same wherever it came from.
func ContentHash(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := fsys.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", path)
		n, err := io.Copy(h, f)
		fmt.Fprintf(h, "\x00%d\x00", n)
		return err
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// resolvedFromInfo decodes the resolved source stored with a release revision.
func resolvedFromInfo(v interface{}) *rukpakv1alpha1.ResolvedSource {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	rs := &rukpakv1alpha1.ResolvedSource{}
	if json.Unmarshal(b, rs) != nil || rs.Type == "" {
		return nil
	}
	return rs
}

// Keys of a render Result's RevisionInfo (helm.InfoChartVersion, helm.InfoValuesHash), recorded
// with a revision and shown in status.history.
const (
	InfoChartVersion = "chartVersion"
	InfoValuesHash   = "valuesHash"
)
