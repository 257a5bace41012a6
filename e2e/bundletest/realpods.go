package bundletest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/client-go/rest"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// How the operator's pods run (Options.Pods).
const (
	// PodsAuto runs them for real when this runs as root with the real-node binaries already cached
	// (`make node-binaries`), else simulated; the report says which and why.
	PodsAuto = "auto"
	// PodsReal runs them on a real kubelet (root; the node binaries are built when missing).
	PodsReal = "real"
	// PodsSimulated has kwok mark them Running and Ready.
	PodsSimulated = "simulated"
)

// LoadImage is an image the bundle's pods run that the test serves itself: the real node pulls Ref
// from the test's registry instead of Ref's registry, as `kind load` makes a node hold an image.
type LoadImage struct {
	// Ref is the image's name as the bundle's CSV names it (a tag or a digest).
	Ref string
	// File is a tarball as `docker save` or `crane pull` writes it, or an OCI image layout directory
	// holding one image.
	File string
}

// ParseLoadImage parses REF=FILE.
func ParseLoadImage(s string) (LoadImage, error) {
	ref, file, ok := strings.Cut(s, "=")
	if !ok || ref == "" || file == "" {
		return LoadImage{}, fmt.Errorf("--load-image %q: want REF=FILE, e.g. quay.io/me/my-operator:v1.2.0=my-operator.tar", s)
	}
	if _, err := name.ParseReference(ref); err != nil {
		return LoadImage{}, fmt.Errorf("--load-image %q: %w", s, err)
	}
	return LoadImage{Ref: ref, File: file}, nil
}

// podsMode decides whether the pods run for real, and says why in a line of the report.
func podsMode(o Options) (real bool, why string, err error) {
	root := os.Geteuid() == 0
	switch o.Pods {
	case "", PodsAuto:
		if !root {
			return false, "--pods auto: simulated, because real pods need root (network and mount namespaces, cgroups)", nil
		}
		if _, _, err := localcluster.CachedNodeBinaries(o.CacheDir); err != nil {
			return false, "--pods auto: simulated, because the real-node binaries are not built (`make node-binaries`, or --pods real builds them)", nil
		}
		return true, "--pods auto: real, running as root with the real-node binaries cached", nil
	case PodsReal:
		if !root {
			return false, "", errors.New("--pods real needs root (network and mount namespaces, cgroups): run as root, or pass --pods simulated")
		}
		return true, "--pods real", nil
	case PodsSimulated:
		return false, "--pods simulated", nil
	}
	return false, "", fmt.Errorf("--pods %q: want auto, real or simulated", o.Pods)
}

// startReal starts the control plane with one real kubelet node in a network namespace of its own,
// the registry on 127.0.0.1 (pushes) and on the node's address (pulls), the images of
// Options.LoadImages in it behind a mirror for each of their registries, and OLM v1 installed by its
// Helm chart from the images of BinDir, as pods.
func (t *tester) startReal(ctx context.Context) (string, error) {
	bins, nodeBins, err := localcluster.BuildNode(ctx, t.o.CacheDir, prefixWriter{t.out})
	if err != nil {
		return "", err
	}
	c, err := localcluster.Up(ctx, localcluster.Options{
		Dir: filepath.Join(t.o.Dir, "cluster"), Binaries: bins, NodeBinaries: nodeBins, RealNodes: 1, Log: prefixWriter{t.out},
		BeforeControllers: func(cfg *rest.Config) error {
			_, err := localcluster.InstallCRDs(cfg, t.o.RepoRoot)
			return err
		},
	})
	if err != nil {
		// Up stopped what it started.
		return "", err
	}
	t.env = &localcluster.Environment{Cluster: c, Kubeconfig: c.Kubeconfig, LogDir: filepath.Join(c.Dir, "logs")}
	if t.env.Config, err = c.RESTConfig(); err != nil {
		return "", err
	}
	if t.env.Registry, err = localcluster.StartRegistry("127.0.0.1:0", nil); err != nil {
		return "", err
	}
	if err := t.env.Registry.ServeIn(c.Netns); err != nil {
		return "", err
	}
	t.pullAddr = t.env.Registry.ClusterAddr
	var lines []string
	for _, li := range t.o.LoadImages {
		line, err := t.loadImage(ctx, li)
		if err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
	start := time.Now()
	if _, _, err := chart.InstallFromBinaries(ctx, c.Kubeconfig, t.o.RepoRoot, chart.FromBinaries{
		BinDir: t.o.BinDir, PushRegistry: t.env.Registry.Addr + "/olmv1", PullRegistry: t.pullAddr + "/olmv1",
		Release: "olmv1", Values: map[string]any{"tls": map[string]any{"mode": "selfSigned"}},
	}, t.o.Timeout); err != nil {
		return "", fmt.Errorf("installing OLM v1 with its Helm chart from the images of %s: %w", t.o.BinDir, err)
	}
	lines = append([]string{
		fmt.Sprintf("Kubernetes %s with real node %s (containerd, runc) in network namespace %s; registry %s (pulled as %s)",
			localcluster.KubernetesVersion, localcluster.RealNodeName, c.Netns.Name, t.env.Registry.Addr, t.pullAddr),
		fmt.Sprintf("OLM v1 installed by its Helm chart from %s, its three pods Ready in %s", t.o.BinDir, time.Since(start).Round(100*time.Millisecond)),
	}, lines...)
	return strings.Join(lines, "\n"), nil
}

// loadImage pushes li's image into the test's registry under li.Ref's repository path and makes
// the node pull li.Ref's registry from there.
func (t *tester) loadImage(ctx context.Context, li LoadImage) (string, error) {
	ref, err := name.ParseReference(li.Ref)
	if err != nil {
		return "", err
	}
	img, err := readImageFile(li.File, ref)
	if err != nil {
		return "", fmt.Errorf("--load-image %s=%s: %w", li.Ref, li.File, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	tag := "loaded"
	switch r := ref.(type) {
	case name.Tag:
		tag = r.TagStr()
	case name.Digest:
		if r.DigestStr() != d.String() {
			return "", fmt.Errorf("--load-image %s=%s: the file's image is %s, not the digest the reference names (load the image as pulled, e.g. `crane pull --format=oci`)", li.Ref, li.File, d)
		}
	}
	push := fmt.Sprintf("%s/%s:%s", t.env.Registry.Addr, ref.Context().RepositoryStr(), tag)
	if _, err := imagebuild.Push(ctx, img, push, imagebuild.WithInsecure()); err != nil {
		return "", fmt.Errorf("pushing %s: %w", push, err)
	}
	host := ref.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	if err := t.env.Cluster.MirrorRegistry(host, t.pullAddr); err != nil {
		return "", err
	}
	return fmt.Sprintf("image %s (%s) loaded from %s: the node pulls %s from %s", li.Ref, d, li.File, host, t.pullAddr), nil
}

// readImageFile reads the one image of an OCI layout directory, or the image ref names in a
// `docker save` tarball (its only image when ref is not in it).
func readImageFile(path string, ref name.Reference) (v1.Image, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if tag, ok := ref.(name.Tag); ok {
			if img, err := tarball.ImageFromPath(path, &tag); err == nil {
				return img, nil
			}
		}
		return tarball.ImageFromPath(path, nil)
	}
	idx, err := layout.ImageIndexFromPath(path)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("the OCI layout %s holds %d manifests; want one image", path, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

// clusterRefs rewrites, in every file of the catalog directory dir, the registry's push address to
// the address the cluster pulls from (they differ only with real pods).
func (t *tester) clusterRefs(dir string) error {
	if t.pullAddr == "" || t.pullAddr == t.env.Registry.Addr {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := strings.ReplaceAll(string(data), t.env.Registry.Addr+"/", t.pullAddr+"/")
		if out == string(data) {
			return nil
		}
		return os.WriteFile(path, []byte(out), 0o644)
	})
}

// clusterRef is ref (pushed to the registry's loopback address) as the cluster pulls it.
func (t *tester) clusterRef(ref string) string {
	if t.pullAddr == "" {
		return ref
	}
	return strings.Replace(ref, t.env.Registry.Addr+"/", t.pullAddr+"/", 1)
}
