package signaturetest

import (
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// ReplaceSignature pushes a signature image of digest with one layer, payload with annotations,
// in place of the one its signature tag holds: how tests write a tampered or forged signature
// (e.g. from KeylessSigner.Annotations, then edited).
func ReplaceSignature(digest name.Digest, payload []byte, annotations map[string]string, opts ...remote.Option) error {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(payload, signature.PayloadMediaType), Annotations: annotations})
	if err != nil {
		return err
	}
	tag, err := signature.SignatureTag(digest)
	if err != nil {
		return err
	}
	return remote.Write(tag, img, opts...)
}
