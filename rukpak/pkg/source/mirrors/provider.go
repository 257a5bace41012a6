package mirrors

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTTL is how long listed mirror sets are used before they are listed again.
const DefaultTTL = 30 * time.Second

// ConfigGroupVersion is the API of the mirror sets.
var ConfigGroupVersion = schema.GroupVersion{Group: "config.openshift.io", Version: "v1"}

// Provider supplies the current Config: the registries.conf File, read again whenever its
// modification time or size changes (a mounted ConfigMap's update is seen at the next pull), merged
// with the cluster's ImageDigestMirrorSets and ImageTagMirrorSets, listed through Reader at most
// once per TTL. It is safe for concurrent use.
type Provider struct {
	// File is the path of a registries.conf file; empty for none.
	File string
	// Reader lists the mirror sets; nil for none. Give it a reader that asks the API server (not
	// a cache that would start a watch). A cluster that does not serve config.openshift.io/v1 has
	// none; that is looked up again after TTL.
	Reader client.Reader
	// TTL defaults to DefaultTTL.
	TTL time.Duration
	// Now defaults to time.Now.
	Now func() time.Time

	mu        sync.Mutex
	fileStamp fileStamp
	fileCfg   *Config
	fileErr   error
	setsAt    time.Time
	setsOK    bool
	sets      []MirrorSet
}

type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

// Config returns the configuration in force. An unreadable or invalid file is an error (pulling
// without it could contact a registry it blocks). A failed list of the mirror sets is an error
// until one list succeeds; after that the last listed sets are used until the next list succeeds.
func (p *Provider) Config(ctx context.Context) (*Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	file, err := p.readFileLocked()
	if err != nil {
		return nil, err
	}
	if p.Reader == nil {
		return file, nil
	}
	if err := p.listLocked(ctx); err != nil {
		return nil, err
	}
	if len(p.sets) == 0 {
		return file, nil
	}
	return Merge(file, p.sets)
}

// CheckFile reads and validates File now, for a process to refuse to start with a bad one.
func (p *Provider) CheckFile() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.readFileLocked()
	return err
}

func (p *Provider) readFileLocked() (*Config, error) {
	if p.File == "" {
		return nil, nil
	}
	fi, err := os.Stat(p.File)
	if err != nil {
		return nil, fmt.Errorf("registry mirror configuration %s (--registries-conf): %w", p.File, err)
	}
	stamp := fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
	if stamp == p.fileStamp {
		return p.fileCfg, p.fileErr
	}
	data, err := os.ReadFile(p.File)
	if err != nil {
		return nil, fmt.Errorf("registry mirror configuration %s (--registries-conf): %w", p.File, err)
	}
	p.fileStamp = stamp
	p.fileCfg, p.fileErr = Parse(data, p.File)
	return p.fileCfg, p.fileErr
}

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Provider) listLocked(ctx context.Context) error {
	ttl := p.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := p.now()
	if p.setsOK && now.Sub(p.setsAt) < ttl {
		return nil
	}
	var sets []MirrorSet
	for _, kind := range []string{KindImageDigestMirrorSet, KindImageTagMirrorSet} {
		got, err := p.list(ctx, kind)
		if err != nil {
			if p.setsOK {
				return nil // keep the last listed sets; listed again at the next pull
			}
			return err
		}
		sets = append(sets, got...)
	}
	p.sets, p.setsAt, p.setsOK = sets, now, true
	return nil
}

// ListError is a failed list of the mirror sets (as opposed to an invalid configuration).
type ListError struct {
	// Forbidden: the controller's RBAC does not allow the list.
	Forbidden bool
	Err       error
}

func (e *ListError) Error() string { return e.Err.Error() }

func (e *ListError) Unwrap() error { return e.Err }

// list lists the objects of one kind; none when the cluster does not serve the API.
func (p *Provider) list(ctx context.Context, kind string) ([]MirrorSet, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(ConfigGroupVersion.WithKind(kind + "List"))
	err := p.Reader.List(ctx, l)
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		return nil, &ListError{Forbidden: true, Err: fmt.Errorf("the controller may not list %ss (check its ClusterRole: list on %ss in API group %s): %w",
			kind, strings.ToLower(kind), ConfigGroupVersion.Group, err)}
	case err != nil:
		return nil, &ListError{Err: fmt.Errorf("listing %ss (%s): %w", kind, ConfigGroupVersion, err)}
	}
	out := make([]MirrorSet, 0, len(l.Items))
	for i := range l.Items {
		l.Items[i].SetKind(kind)
		s, err := MirrorSetFromUnstructured(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
