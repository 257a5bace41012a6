package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// unpackConfigMaps writes the data and binaryData keys of each ConfigMap as files under its path.
func (u *DiskUnpacker) unpackConfigMaps(ctx context.Context, key string, specs []rukpakv1alpha1.ConfigMapSource, opts Options) (*Result, error) {
	if u.cfg.Client == nil {
		return nil, newError(KindInternal, nil, "cannot read ConfigMaps: the unpacker has no Kubernetes client (Config.Client)")
	}
	if opts.Namespace == "" {
		return nil, newError(KindInternal, nil, "cannot read ConfigMaps: no namespace given (Options.Namespace)")
	}
	dirs := make([]string, len(specs))
	fingerprint := []string{"configmaps"}
	for i, s := range specs {
		d, err := cleanEntryName(strings.TrimSuffix(s.Path, "/"))
		if err != nil {
			return nil, newError(KindInvalidSource, err, "spec.source.configMaps[%d].path %q must be a relative path without '..' elements", i, s.Path)
		}
		dirs[i] = d
		fingerprint = append(fingerprint, s.ConfigMap.Name, d)
	}

	cms := make([]*corev1.ConfigMap, len(specs))
	resolved := rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeConfigMaps}
	for i, s := range specs {
		cm := &corev1.ConfigMap{}
		err := u.cfg.Client.Get(ctx, types.NamespacedName{Namespace: opts.Namespace, Name: s.ConfigMap.Name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			return nil, newError(KindNotFound, err, "ConfigMap %q not found in namespace %q (check spec.source.configMaps[%d].configMap.name, or create the ConfigMap)",
				s.ConfigMap.Name, opts.Namespace, i)
		case apierrors.IsForbidden(err):
			return nil, newError(KindUnauthorized, err, "the controller may not read ConfigMap %q in namespace %q (check its RBAC): %v", s.ConfigMap.Name, opts.Namespace, err)
		case err != nil:
			return nil, newError(KindUnreachable, err, "reading ConfigMap %q in namespace %q: %v", s.ConfigMap.Name, opts.Namespace, err)
		}
		cms[i] = cm
		resolved.ConfigMaps = append(resolved.ConfigMaps, rukpakv1alpha1.ResolvedConfigMapSource{Name: cm.Name, ResourceVersion: cm.ResourceVersion})
	}

	fp := strings.Join(fingerprint, "\x00")
	if res := u.reuse(key, fp, resolved, opts); res != nil {
		return res, nil
	}
	staged, err := u.cache.stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged)
	if err := u.writeConfigMaps(staged, dirs, cms); err != nil {
		return nil, err
	}
	dir, err := u.cache.commitContent(key, staged, resolved, fp)
	if err != nil {
		return nil, err
	}
	return &Result{Dir: dir, ResolvedSource: resolved}, nil
}

func (u *DiskUnpacker) writeConfigMaps(staged string, dirs []string, cms []*corev1.ConfigMap) error {
	c, err := openContentDir(staged, u.cfg.Limits, "ConfigMaps")
	if err != nil {
		return err
	}
	defer c.close()
	layout := newFileLayout()
	for i, cm := range cms {
		files := map[string][]byte{}
		for k, v := range cm.Data {
			files[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			files[k] = v
		}
		names := make([]string, 0, len(files))
		for k := range files {
			names = append(names, k)
		}
		sort.Strings(names)
		c.what = fmt.Sprintf("ConfigMap %q", cm.Name)
		if err := c.mkdir(dirs[i]); err != nil {
			return err
		}
		for _, k := range names {
			if k == "" || k == "." || k == ".." || strings.ContainsAny(k, "/\\") {
				return c.invalid("key %q cannot be a file name", k)
			}
			name := path.Join(dirs[i], k)
			if other, ok := layout.add(name, cm.Name); !ok {
				return newError(KindInvalidSource, nil, "ConfigMaps %q and %q both write %q (give them different paths: spec.source.configMaps[%d].path)",
					other, cm.Name, name, i)
			}
			if err := c.writeFile(name, bytes.NewReader(files[k]), 0o644); err != nil {
				return err
			}
		}
	}
	return c.finish()
}

// fileLayout detects two ConfigMaps writing the same file, or a file where another's directory is.
type fileLayout struct {
	files map[string]string // file -> ConfigMap that wrote it
	dirs  map[string]string // directory -> ConfigMap that needed it
}

func newFileLayout() *fileLayout {
	return &fileLayout{files: map[string]string{}, dirs: map[string]string{}}
}

// add records that owner writes file name; it returns the other owner on a conflict.
func (l *fileLayout) add(name, owner string) (string, bool) {
	if other, ok := l.files[name]; ok {
		return other, false
	}
	if other, ok := l.dirs[name]; ok {
		return other, false
	}
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if other, ok := l.files[d]; ok {
			return other, false
		}
	}
	l.files[name] = owner
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		l.dirs[d] = owner
	}
	return "", true
}
