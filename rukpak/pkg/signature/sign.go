package signature

import (
	"context"
	"crypto"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Sign signs digest with key and pushes the signature to its signature tag (SignatureTag): a new
// layer is appended to the signature image already there, if any, so that earlier signatures
// (another key during a rotation) stay valid. It returns the digest reference of the signature
// image it pushed.
func Sign(ctx context.Context, digest name.Digest, key crypto.Signer, opts ...remote.Option) (name.Digest, error) {
	img, err := SignatureImage(digest, key)
	if err != nil {
		return name.Digest{}, err
	}
	return pushSignature(ctx, digest, img, opts)
}

// pushSignature pushes the one-layer signature image img to the signature tag of digest, appending
// its layer to the signature image already there, if any.
func pushSignature(ctx context.Context, digest name.Digest, img v1.Image, opts []remote.Option) (name.Digest, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	tag, err := SignatureTag(digest)
	if err != nil {
		return name.Digest{}, err
	}
	existing, err := remote.Image(tag, opts...)
	switch {
	case isNotFound(err):
	case err != nil:
		return name.Digest{}, fmt.Errorf("reading the signature image %s: %w", tag, err)
	default:
		layers, err := img.Layers()
		if err != nil {
			return name.Digest{}, err
		}
		m, err := img.Manifest()
		if err != nil {
			return name.Digest{}, err
		}
		if img, err = mutate.Append(existing, mutate.Addendum{Layer: layers[0], Annotations: m.Layers[0].Annotations}); err != nil {
			return name.Digest{}, err
		}
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing the signature image %s: %w", tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return digest.Context().Digest(d.String()), nil
}

// SignatureImage is a signature image holding one signature of digest made with key, in cosign's
// layout: an OCI image whose one layer is the payload, annotated with the signature.
func SignatureImage(digest name.Digest, key crypto.Signer) (v1.Image, error) {
	payload, err := NewPayload(digest)
	if err != nil {
		return nil, err
	}
	sig, err := SignPayload(key, payload)
	if err != nil {
		return nil, fmt.Errorf("signing %s: %w", digest, err)
	}
	return signatureImage(payload, map[string]string{AnnotationSignature: sig})
}

// signatureImage is a signature image of one layer: payload with annotations.
func signatureImage(payload []byte, annotations map[string]string) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	return mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(payload, types.MediaType(PayloadMediaType)),
		Annotations: annotations,
	})
}
