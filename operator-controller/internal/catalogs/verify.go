package catalogs

import (
	"bytes"
	"context"
	"fmt"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
)

// What operator-controller reads of a catalog must be the content that the Catalog's
// status.contentHash names before anything is decided with it (see deppy/pkg/cluster's verify.go for
// why and how: the check, the ContentMismatchError and the retry backoff live there, shared with
// `deppy resolve --kubeconfig`). This file supplies what only catalogd's code can: the hash itself.

// ContentMismatchError says that what was read of a catalog is not the content its status names.
// Retrying helps: catalogd serves that content once it has loaded it.
type ContentMismatchError = cluster.ContentMismatchError

// catalogdHasher hashes with ContentHash and marks blobs that do not form a valid catalog as such.
var catalogdHasher = cluster.HasherFunc(func(ctx context.Context, metas []*declcfg.Meta) (string, error) {
	h, err := ContentHash(ctx, metas)
	if fbcvalidate.IsInvalid(err) {
		return "", &cluster.InvalidContentError{Err: err}
	}
	return h, err
})

// ContentHash returns the content hash catalogd computes for a catalog made of blobs, as it reports
// it in status.contentHash ("sha256:<hex>"): the same parsing, validation and canonical form
// (catalogd/pkg/fbcvalidate), so the order of the blobs and their JSON formatting do not matter.
// Blobs that do not form a valid catalog have no hash: the error says why (fbcvalidate.IsInvalid).
func ContentHash(ctx context.Context, metas []*declcfg.Meta) (string, error) {
	// fbcvalidate reads a file tree. Spread the blobs over several JSON files: catalogd's parser
	// works on the files in parallel, one file at a time each.
	const blobsPerFile = 256
	files := fstest.MapFS{}
	for start := 0; start < len(metas); start += blobsPerFile {
		var buf bytes.Buffer
		for _, m := range metas[start:min(start+blobsPerFile, len(metas))] {
			buf.Write(m.Blob)
			buf.WriteByte('\n')
		}
		files[fmt.Sprintf("blobs-%06d.json", start/blobsPerFile)] = &fstest.MapFile{Data: buf.Bytes(), Mode: 0o444}
	}
	res, err := fbcvalidate.Validate(ctx, files)
	if err != nil {
		return "", err
	}
	return res.Hash, nil
}
