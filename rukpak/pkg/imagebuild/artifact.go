package imagebuild

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// artifact is an OCI manifest with an arbitrary config blob and pre-built layers. mutate cannot
// build one, because it always serialises the config as an image config.
type artifact struct {
	config   []byte
	manifest []byte
	layers   map[v1.Hash]v1.Layer
}

var _ partial.CompressedImageCore = (*artifact)(nil)

// newArtifact assembles an OCI image manifest from a config blob, its media type, layers and
// manifest annotations.
func newArtifact(config []byte, configMediaType types.MediaType, layers []v1.Layer, annotations map[string]string) (v1.Image, error) {
	a := &artifact{config: config, layers: map[v1.Hash]v1.Layer{}}
	configDigest, configSize, err := v1.SHA256(bytes.NewReader(config))
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: configMediaType, Digest: configDigest, Size: configSize},
		Annotations:   annotations,
	}
	for _, l := range layers {
		d, err := partial.Descriptor(l)
		if err != nil {
			return nil, err
		}
		m.Layers = append(m.Layers, *d)
		a.layers[d.Digest] = l
	}
	if a.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(a)
}

func (a *artifact) RawConfigFile() ([]byte, error) { return a.config, nil }

func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func (a *artifact) RawManifest() ([]byte, error) { return a.manifest, nil }

func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := a.layers[h]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("artifact has no layer %s", h)
}

// newHelmArtifact wraps a packaged chart in Helm's OCI format.
func newHelmArtifact(meta *chartMetadata, tgz []byte) (v1.Image, error) {
	config, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	layer := static.NewLayer(tgz, HelmChartContentMediaType)
	return newArtifact(config, HelmConfigMediaType, []v1.Layer{layer}, chartAnnotations(meta))
}
