// Package fbcvalidate exposes catalogd's file-based catalog validation to other modules (the
// kubectl-olmv1 CLI). It is a thin wrapper over catalogd/internal/fbc: the CLI runs the same parsing,
// validation and canonical hashing that catalogd runs when it unpacks a Catalog, with the same
// messages, so a catalog that validates here is one catalogd serves with the same content hash.
package fbcvalidate

import (
	"context"
	"io/fs"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

// Result describes a valid catalog.
type Result struct {
	// Hash is the content hash catalogd reports in Catalog status.contentHash ("sha256:<hex>").
	Hash string `json:"hash"`
	// Packages, Channels and Bundles count the blobs of the core schemas.
	Packages int `json:"packages"`
	Channels int `json:"channels"`
	Bundles  int `json:"bundles"`
	// Blobs is the number of FBC blobs of any schema.
	Blobs int `json:"blobs"`
}

// Validate parses and validates the file-based catalog under root (every .json and .yaml file,
// honouring .indexignore), exactly as catalogd does. The error says what is wrong and where; use
// IsInvalid to tell invalid content from an I/O failure.
func Validate(ctx context.Context, root fs.FS) (*Result, error) {
	c, err := fbc.Load(ctx, root)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return &Result{Hash: c.Hash, Packages: c.Counts.Packages, Channels: c.Counts.Channels, Bundles: c.Counts.Bundles, Blobs: len(c.Entries)}, nil
}

// IsInvalid reports whether err says the content is not a valid file-based catalog (catalogd's
// InvalidCatalog reason) rather than a failure to read it.
func IsInvalid(err error) bool { return fbc.IsInvalid(err) }
