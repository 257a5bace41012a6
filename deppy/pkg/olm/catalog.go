package olm

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
)

// Catalog is one file-based catalog, named and ranked.
type Catalog struct {
	// Name identifies the catalog in results and explanations.
	Name string
	// Priority breaks ties between catalogs offering the same version: higher wins.
	Priority int
	// Model is the catalog's content.
	Model model.Model
}

// NewCatalog builds a catalog from declarative config.
func NewCatalog(name string, priority int, cfg *declcfg.DeclarativeConfig) (*Catalog, error) {
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: invalid content: %w", name, err)
	}
	return &Catalog{Name: name, Priority: priority, Model: m}, nil
}

// LoadCatalogFS reads every FBC file (YAML or JSON) under fsys.
func LoadCatalogFS(ctx context.Context, name string, priority int, fsys fs.FS) (*Catalog, error) {
	cfg, err := declcfg.LoadFS(ctx, fsys)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", name, err)
	}
	return NewCatalog(name, priority, cfg)
}

// LoadCatalogDir reads every FBC file under dir. An empty name defaults to
// the directory's base name.
func LoadCatalogDir(ctx context.Context, name string, priority int, dir string) (*Catalog, error) {
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		name = filepath.Base(abs)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w (pass a directory holding FBC YAML or JSON files)", name, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("catalog %q: %s is not a directory (pass a directory holding FBC YAML or JSON files)", name, dir)
	}
	return LoadCatalogFS(ctx, name, priority, os.DirFS(dir))
}
