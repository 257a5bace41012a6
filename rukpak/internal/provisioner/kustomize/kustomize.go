// Package kustomize implements the core-rukpak-io-kustomize provisioner: the bundle holds one or more
// kustomizations, and the one in spec.config.path (the bundle root when empty) is built in-process
// with kustomize's krusty, as `kustomize build` would, and its output applied.
//
// The build is closed: it reads only the bundle (copied into an in-memory file system, with
// kustomize's default root-only load restrictions), runs no exec or Go plugins and no Helm chart
// inflation, and never touches the network. Remote bases and resources (git repositories, http
// URLs) are rejected before the build with an error naming them; vendor them into the bundle.
package kustomize

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// ProvisionerClassName is the spec.provisionerClassName this renderer serves.
const ProvisionerClassName = "core-rukpak-io-kustomize"

// Reasons of the InvalidBundleErrors this renderer returns (the Unpacked condition's reason).
const (
	// ReasonInvalidKustomization: there is no kustomization at the path, or the build fails.
	ReasonInvalidKustomization = "InvalidBundle"
	// ReasonRemoteReference: the kustomization refers to a remote base or file.
	ReasonRemoteReference = "RemoteReference"
)

// Renderer builds kustomizations.
type Renderer struct{}

var _ provisioner.Renderer = (*Renderer)(nil)

// New returns a kustomize Renderer.
func New() *Renderer { return &Renderer{} }

// Render builds the kustomization at spec.config.path of the bundle.
func (r *Renderer) Render(_ context.Context, req provisioner.Request) ([]client.Object, error) {
	target := "."
	if req.Config != nil && req.Config.Path != "" {
		target = path.Clean(strings.TrimPrefix(req.Config.Path, "./"))
	}
	if target == ".." || strings.HasPrefix(target, "../") || path.IsAbs(target) {
		return nil, invalid(ReasonInvalidKustomization, fmt.Sprintf("spec.config.path %q must be a relative path inside the bundle", req.Config.Path))
	}
	if kustomizationFile(req.Content, target) == "" {
		return nil, invalid(ReasonInvalidKustomization, noKustomization(req.Content, target))
	}
	if err := checkLocal(req.Content, target, map[string]bool{}); err != nil {
		return nil, err
	}

	fsys := filesys.MakeFsInMemory()
	if err := copyInto(fsys, req.Content); err != nil {
		return nil, fmt.Errorf("copying the bundle into the build's file system: %w", err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	resMap, err := krusty.MakeKustomizer(opts).Run(fsys, path.Join("/", target))
	if err != nil {
		return nil, invalid(ReasonInvalidKustomization, fmt.Sprintf("building %s: %v", describe(target), err))
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, invalid(ReasonInvalidKustomization, fmt.Sprintf("building %s: encoding the output: %v", describe(target), err))
	}
	objs, err := manifest.Decode("kustomize build "+target, out)
	if err != nil {
		return nil, invalid(ReasonInvalidKustomization, err.Error())
	}
	if len(objs) == 0 {
		return nil, invalid(ReasonInvalidKustomization, fmt.Sprintf("%s builds no objects", describe(target)))
	}
	return unique(target, objs)
}

func describe(target string) string {
	if target == "." {
		return "the kustomization at the bundle root"
	}
	return fmt.Sprintf("the kustomization in %s/", target)
}

// kustomizationFile returns the path of dir's kustomization file, or "".
func kustomizationFile(content fs.FS, dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if st, err := fs.Stat(content, p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// noKustomization says that target has no kustomization, listing the directories that have one.
func noKustomization(content fs.FS, target string) string {
	var found []string
	_ = fs.WalkDir(content, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || len(found) == 10 {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != "." {
			return fs.SkipDir
		}
		if kustomizationFile(content, p) != "" {
			found = append(found, p)
		}
		return nil
	})
	msg := fmt.Sprintf("there is no kustomization.yaml in %s/ (spec.config.path)", target)
	if target == "." {
		msg = "there is no kustomization.yaml at the bundle root"
	}
	if len(found) == 0 {
		return msg + ", and none anywhere in the bundle: is it a kustomization?"
	}
	return fmt.Sprintf("%s; set spec.config.path to one of: %s", msg, strings.Join(found, ", "))
}

// copyInto writes every regular file of content into fsys under "/".
func copyInto(fsys filesys.FileSystem, content fs.FS) error {
	return fs.WalkDir(content, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return fsys.MkdirAll(path.Join("/", p))
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(content, p)
		if err != nil {
			return err
		}
		return fsys.WriteFile(path.Join("/", p), data)
	})
}

// unique fails when two built objects are the same object.
func unique(target string, objs []manifest.Object) ([]client.Object, error) {
	seen := map[string]bool{}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		u := o.Obj
		key := fmt.Sprintf("%s/%s %s/%s", u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())
		if seen[key] {
			return nil, invalid(ReasonInvalidKustomization, fmt.Sprintf("%s builds %s %q twice", describe(target), u.GetKind(), u.GetName()))
		}
		seen[key] = true
		out = append(out, u)
	}
	return out, nil
}

func invalid(reason, msg string) error {
	return &provisioner.InvalidBundleError{Reason: reason, Message: "kustomize: " + msg}
}

var errRemote = errors.New("rukpak builds kustomizations without network access: vendor the remote content into the bundle and refer to it by a relative path")
