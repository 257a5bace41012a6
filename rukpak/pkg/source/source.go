// Package source fetches catalog and bundle content, in-process, from the places a Source names:
// container images (go-containerregistry), ConfigMaps, HTTP(S) URLs and git repositories. catalogd and
// rukpak both use it through the Unpacker interface.
package source

import (
	"context"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Unpacker fetches a Source into a local content directory.
type Unpacker interface {
	// Unpack fetches src for the owner identified by key (for example "catalog/operatorhub" or
	// "bundledeployment/my-bd") and returns where its content is. Content of one key never leaks
	// into another's directory.
	Unpack(ctx context.Context, key string, src rukpakv1alpha1.Source, opts Options) (*Result, error)
	// Cleanup removes everything stored for key.
	Cleanup(ctx context.Context, key string) error
}

// Options tune one Unpack call.
type Options struct {
	// ImageDir is the directory of an image to extract: "configs" for catalogs, "" (the image root)
	// for bundles. Its content lands at the root of Result.Dir. Other source types ignore it.
	ImageDir string
	// Namespace is where the ConfigMaps and Secrets named in the source are read from (the
	// controller's own namespace).
	Namespace string
	// Previous is the resolved source of the last successful unpack for this key, if any. When the
	// source still resolves to it (same image digest, git commit or HTTP ETag), Unpack does not fetch
	// the content again and returns Result.Unchanged.
	Previous *rukpakv1alpha1.ResolvedSource
}

// Result is a successful unpack.
type Result struct {
	// Dir holds the unpacked content. It stays valid until the next Unpack or Cleanup of the same key;
	// callers must not modify it.
	Dir string
	// ResolvedSource pins what was fetched: image digest, git commit, HTTP ETag, ConfigMap versions.
	ResolvedSource rukpakv1alpha1.ResolvedSource
	// Unchanged is true when the source resolved to Options.Previous and the content was not fetched
	// again.
	Unchanged bool
}
