package imagebuild

import (
	"fmt"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// CatalogConfigsLabel is the image label that tells catalog readers where the FBC lives.
	CatalogConfigsLabel = "operators.operatorframework.io.index.configs.v1"
	// CatalogConfigsDir is where CatalogImage puts the catalog inside the image.
	CatalogConfigsDir = "/configs"
)

// CatalogImage builds a catalog image from a file-based catalog directory: the directory's content
// goes under /configs (its layout kept as is) and the image is labelled
// operators.operatorframework.io.index.configs.v1=/configs. The directory must hold at least one
// .json, .yaml or .yml file; their content is not parsed here.
func CatalogImage(dir string) (v1.Image, error) {
	if err := requireDir("catalog directory", dir); err != nil {
		return nil, err
	}
	entries, err := walkTree(dir, walkOptions{})
	if err != nil {
		return nil, fmt.Errorf("catalog directory %q: %w", dir, err)
	}
	if !hasCatalogFile(entries) {
		return nil, fmt.Errorf("catalog directory %q has no .json, .yaml or .yml file (a file-based catalog holds olm.package, olm.channel and olm.bundle blobs in such files)", dir)
	}
	labels := map[string]string{CatalogConfigsLabel: CatalogConfigsDir}
	img, err := entriesImage(entries, CatalogConfigsDir[1:], labels, "imagebuild: COPY catalog "+CatalogConfigsDir)
	if err != nil {
		return nil, fmt.Errorf("catalog directory %q: %w", dir, err)
	}
	return img, nil
}

func hasCatalogFile(entries []entry) bool {
	for _, e := range entries {
		if e.kind == kindDir {
			continue
		}
		switch path.Ext(e.rel) {
		case ".json", ".yaml", ".yml":
			return true
		}
	}
	return false
}
