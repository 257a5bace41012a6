package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// standInPrefix is the path under which the registry serves its stand-in image (ServeStandIn) for
// every repository and tag. A node's containerd reaches it through a hosts.toml mirror with
// override_path, so the pull keeps the image's own name (MirrorToStandIn).
const standInPrefix = "/olmv1-stand-in/v2/"

// standIn is one image, served whatever repository or tag is asked for.
type standIn struct {
	manifest  []byte
	mediaType string
	digest    v1.Hash
	blobs     map[v1.Hash][]byte
}

// newStandIn reads img (its manifest, config and compressed layers) into memory.
func newStandIn(img v1.Image) (*standIn, error) {
	s := &standIn{blobs: map[v1.Hash][]byte{}}
	var err error
	if s.manifest, err = img.RawManifest(); err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	s.mediaType = string(mt)
	if s.digest, err = img.Digest(); err != nil {
		return nil, err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	if s.blobs[cfgName], err = img.RawConfigFile(); err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		s.blobs[d] = data
	}
	return s, nil
}

// ServeHTTP answers GET and HEAD of <prefix><name>/manifests/<tag or digest> and
// <prefix><name>/blobs/<digest> for any name: a tag always resolves to the stand-in's manifest.
func (s *standIn) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "the stand-in image is read-only", http.StatusMethodNotAllowed)
		return
	}
	rest := strings.TrimPrefix(req.URL.Path, standInPrefix)
	var body []byte
	var mediaType string
	var digest string
	switch {
	case rest == "" || rest == "/":
		w.WriteHeader(http.StatusOK)
		return
	case strings.Contains(rest, "/manifests/"):
		ref := rest[strings.LastIndex(rest, "/manifests/")+len("/manifests/"):]
		if h, err := v1.NewHash(ref); err == nil && h != s.digest {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"only the stand-in image is served here"}]}`, http.StatusNotFound)
			return
		}
		body, mediaType, digest = s.manifest, s.mediaType, s.digest.String()
	case strings.Contains(rest, "/blobs/"):
		h, err := v1.NewHash(rest[strings.LastIndex(rest, "/blobs/")+len("/blobs/"):])
		data, ok := s.blobs[h]
		if err != nil || !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"not a blob of the stand-in image"}]}`, http.StatusNotFound)
			return
		}
		body, mediaType, digest = data, "application/octet-stream", h.String()
	default:
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		_, _ = io.Copy(w, bytes.NewReader(body))
	}
}

// ServeStandIn makes the registry serve img for every repository and tag under its stand-in path,
// besides what was pushed to it. A cluster whose fixtures name images nobody can pull
// (registry.example.test/…, registry.invalid/…) then runs them for real: MirrorToStandIn sends a
// node's pulls of those registries here.
func (r *Registry) ServeStandIn(img v1.Image) error {
	s, err := newStandIn(img)
	if err != nil {
		return fmt.Errorf("the registry's stand-in image: %w", err)
	}
	r.standIn.Store(s)
	return nil
}

// StandInImage is the stand-in for a cluster's fixtures' workload images: the pause program (it
// ignores its arguments, exits on SIGTERM) as a one-layer image run as nobody.
func StandInImage(nb *NodeBinaries) (v1.Image, error) {
	return binaryImage(nb.Pause, "pause", "65534")
}

// MirrorToStandIn tells the node's containerd to pull every image of each registry host from the
// registry's stand-in path (Registry.ServeStandIn), at the address where the node reaches the registry
// (ServeRegistry first). The pods keep their images' names.
func (k *KindNode) MirrorToStandIn(ctx context.Context, r *Registry, hosts ...string) error {
	for _, host := range hosts {
		dir := "/etc/containerd/certs.d/" + host
		cmd := exec.CommandContext(ctx, "docker", "exec", "-i", k.Name, "sh", "-c", `mkdir -p "$1" && cat > "$1/hosts.toml"`, "sh", dir)
		cmd.Stdin = strings.NewReader(standInHosts(host, r.ClusterAddr))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("writing %s/hosts.toml in kind node %s: %w: %s", dir, k.Name, err, out)
		}
	}
	return nil
}

// standInHosts is the containerd hosts.toml sending pulls of host to the stand-in path of the
// plain-HTTP registry at mirror (host:port); override_path keeps containerd from adding /v2.
func standInHosts(host, mirror string) string {
	return fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n",
		"https://"+host, "http://"+mirror+strings.TrimSuffix(standInPrefix, "/"))
}
