package kindnode

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/olmv1/olmv1/e2e/chart/images"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// Tags of the images whose binaries are not the versions kubeadm would pick for KubernetesVersion;
// the kind configuration (KindConfig) tells kubeadm to use them.
var (
	// EtcdTag is registry.k8s.io/etcd's tag for the etcd built here.
	EtcdTag = strings.TrimPrefix(localcluster.EtcdVersion, "v") + "-olmv1"
	// CoreDNSTag is registry.k8s.io/coredns/coredns's tag for the CoreDNS built here.
	CoreDNSTag = localcluster.KindCoreDNSBuild
)

// PauseImage is the pod sandbox image the node's containerd pins (imported, never pulled).
const PauseImage = "olmv1.local/pause:olmv1-1"

// nodeImage is one image baked into the node: its registry.k8s.io name and how it is made.
type nodeImage struct {
	ref        string
	binary     string // copied to /usr/local/bin/<base name>
	entrypoint []string
	base       string // a root filesystem directory under the binary (kube-proxy's iptables)
}

func nodeImages(b *localcluster.Binaries, nb *localcluster.NodeBinaries, kb *localcluster.KindBinaries, proxyBase string) []nodeImage {
	v := localcluster.KubernetesVersion
	return []nodeImage{
		{ref: "registry.k8s.io/kube-apiserver:" + v, binary: b.APIServer},
		{ref: "registry.k8s.io/kube-controller-manager:" + v, binary: b.ControllerManager},
		{ref: "registry.k8s.io/kube-scheduler:" + v, binary: b.Scheduler},
		{ref: "registry.k8s.io/kube-proxy:" + v, binary: b.KubeProxy, base: proxyBase},
		{ref: "registry.k8s.io/etcd:" + EtcdTag, binary: b.Etcd},
		{ref: "registry.k8s.io/coredns/coredns:" + CoreDNSTag, binary: kb.CoreDNS, entrypoint: []string{"/usr/local/bin/coredns"}},
		{ref: PauseImage, binary: nb.Pause, entrypoint: []string{"/usr/local/bin/pause"}},
	}
}

// build makes the image: one layer with the base (if any), /etc/passwd and /etc/group, /tmp and the
// binary.
func (n nodeImage) build() (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if n.base != "" {
		if err := tarTree(tw, n.base, ""); err != nil {
			return nil, err
		}
	} else {
		for _, f := range []struct {
			path string
			data string
		}{{"etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n"}, {"etc/group", "root:x:0:\nnobody:x:65534:\n"}} {
			if err := addFile(tw, f.path, 0o644, []byte(f.data)); err != nil {
				return nil, err
			}
		}
		if err := addDir(tw, "tmp", 0o1777); err != nil {
			return nil, err
		}
	}
	bin, err := os.ReadFile(n.binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", n.ref, err)
	}
	if err := addFile(tw, "usr/local/bin/"+filepath.Base(n.binary), 0o755, bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return images.FromLayer(buf.Bytes(), func(c *v1.Config) {
		c.Entrypoint = n.entrypoint
		c.Env = []string{"PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"}
		c.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/olmv1/olmv1", "olmv1.built-from": filepath.Base(n.binary)}
	})
}

// writeArchive writes the image as a docker-format archive tagged with its ref (what ctr imports).
func (n nodeImage) writeArchive(path string) error {
	img, err := n.build()
	if err != nil {
		return err
	}
	t, err := name.NewTag(n.ref, name.WeakValidation)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, t, img)
}
