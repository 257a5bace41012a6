package source

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Defaults of Config and Limits.
const (
	DefaultTimeout = 5 * time.Minute
	// DefaultResponseTimeout bounds the wait for a server's answer to each request (its response
	// headers; the body may take longer): a registry that accepts connections and never answers is
	// reported after it, not after Timeout, and frees its worker for the other bundles.
	DefaultResponseTimeout = 30 * time.Second
	DefaultMaxBytes        = int64(2 << 30) // 2 GiB
	DefaultMaxFiles        = 200_000
)

// Config configures New.
type Config struct {
	// CacheDir holds the unpacked content and the image cache; it is created when missing. Give each
	// process its own directory (an emptyDir volume suits: content survives container restarts, and
	// is fetched again after a Pod is rescheduled).
	CacheDir string
	// Client reads the ConfigMaps of ConfigMaps sources and the Secrets that sources name
	// (pullSecret, caSecret, authSecret), in Options.Namespace. It may be a cached client.
	Client client.Reader
	// Limits bound what one Unpack may write.
	Limits Limits
	// Timeout bounds one Unpack, network included (default DefaultTimeout).
	Timeout time.Duration
	// ResponseTimeout bounds the wait for the response headers of each request to a registry, HTTP
	// source or git server (default DefaultResponseTimeout); it is set on Transport unless Transport
	// sets ResponseHeaderTimeout itself.
	ResponseTimeout time.Duration
	// Transport is the base of every HTTP connection to registries, HTTP sources and git over
	// http(s); each source's TLS settings are applied to a clone. Default: a clone of
	// http.DefaultTransport.
	Transport *http.Transport
	// ClientTLS, when set, applies the TLS profile (minimum version, cipher suites, curves) to the
	// TLS configuration of Transport, e.g. boot.TLSProfile.Apply.
	ClientTLS func(*tls.Config)
	// Platform picks the image of a multi-platform image index (default linux/<GOARCH of this
	// process>; the content of catalog and bundle images is the same on every platform).
	Platform *v1.Platform
	// Log receives one line per fetch (V(1)) and per cache hit (V(2)).
	Log logr.Logger
	// Mirrors supplies the registry mirror configuration that every image pull follows (a
	// *mirrors.Provider: registries.conf, ImageDigestMirrorSets, ImageTagMirrorSets). Nil pulls
	// every image from the registry its reference names.
	Mirrors MirrorConfig
	// RequireSignaturesSecret, when set, is the cluster-wide default signature policy
	// (--require-image-signatures, verify.go): the name of a Secret in Options.Namespace whose public
	// keys every image must be signed with, whatever its spec says; sources that are not images
	// are refused.
	RequireSignaturesSecret string
	// HostLimits bound the image pulls in flight to a registry host that has not proven itself
	// (hostlimit.go). The zero value sets no limit.
	HostLimits HostLimits
}

// Limits bound one Unpack, so that a hostile or broken source cannot fill the disk: an archive
// that expands past them (a decompression bomb) fails with KindTooLarge.
type Limits struct {
	// MaxBytes bounds the bytes read after decompression (every layer of an image, the archive or
	// file of an HTTP source), the bytes written (ConfigMaps, git files) and, separately, the bytes
	// of the packfile a git fetch receives (the fetch stops as soon as it is exceeded). Default
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxFiles bounds the number of files, directories and links written. Default DefaultMaxFiles.
	MaxFiles int
	// MaxAdvertisedRefs bounds the reference advertisement an http(s) git server sends (gitrefs.go).
	// Default DefaultMaxAdvertisedRefs.
	MaxAdvertisedRefs int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxAdvertisedRefs <= 0 {
		l.MaxAdvertisedRefs = DefaultMaxAdvertisedRefs
	}
	return l
}

// DiskUnpacker implements Unpacker for every Source type (Image, ConfigMaps, HTTP, Git), storing
// content on local disk under Config.CacheDir. It is safe for concurrent use; calls for the same key
// are serialised.
type DiskUnpacker struct {
	cfg   Config
	cache *cache
	// hosts limits the pulls per registry host (nil without Config.HostLimits).
	hosts *hostLimiter
}

var _ Unpacker = (*DiskUnpacker)(nil)

// New returns a DiskUnpacker storing content under cfg.CacheDir. Content left there by an earlier
// process is reused; anything no key refers to any more is removed.
func New(cfg Config) (*DiskUnpacker, error) {
	if cfg.CacheDir == "" {
		return nil, fmt.Errorf("source.New: Config.CacheDir is required")
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if cfg.ResponseTimeout <= 0 {
		cfg.ResponseTimeout = DefaultResponseTimeout
	}
	if cfg.Transport.ResponseHeaderTimeout == 0 {
		cfg.Transport = cfg.Transport.Clone()
		cfg.Transport.ResponseHeaderTimeout = cfg.ResponseTimeout
	}
	if cfg.ClientTLS != nil {
		cfg.Transport = cfg.Transport.Clone()
		if cfg.Transport.TLSClientConfig == nil {
			cfg.Transport.TLSClientConfig = &tls.Config{}
		}
		cfg.ClientTLS(cfg.Transport.TLSClientConfig)
	}
	if cfg.Platform == nil {
		cfg.Platform = &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	}
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}
	installFileTransport()
	c, err := openCache(cfg.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("source.New: opening cache directory %s: %w", cfg.CacheDir, err)
	}
	u := &DiskUnpacker{cfg: cfg, cache: c}
	if cfg.HostLimits.Unproven > 0 {
		u.hosts = newHostLimiter(cfg.HostLimits)
	}
	return u, nil
}

// Unpack implements Unpacker. Errors are *Error values.
func (u *DiskUnpacker) Unpack(ctx context.Context, key string, src rukpakv1alpha1.Source, opts Options) (*Result, error) {
	if key == "" {
		return nil, newError(KindInternal, nil, "source: Unpack called with an empty key")
	}
	unlock := u.cache.keyLocks.lock(key)
	defer unlock()

	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, timeoutKey{}, u.cfg.Timeout)
	log := u.cfg.Log.WithValues("key", key, "type", src.Type)
	ctx = logr.NewContext(ctx, log)

	var (
		res *Result
		err error
	)
	if err := u.requireImage(src.Type, opts); err != nil {
		return nil, err
	}
	switch src.Type {
	case rukpakv1alpha1.SourceTypeImage:
		if src.Image == nil {
			return nil, missingMember("image", src.Type)
		}
		res, err = u.unpackImage(ctx, key, *src.Image, opts)
	case rukpakv1alpha1.SourceTypeConfigMaps:
		if len(src.ConfigMaps) == 0 {
			return nil, missingMember("configMaps", src.Type)
		}
		res, err = u.unpackConfigMaps(ctx, key, src.ConfigMaps, opts)
	case rukpakv1alpha1.SourceTypeHTTP:
		if src.HTTP == nil {
			return nil, missingMember("http", src.Type)
		}
		res, err = u.unpackHTTP(ctx, key, *src.HTTP, opts)
	case rukpakv1alpha1.SourceTypeGit:
		if src.Git == nil {
			return nil, missingMember("git", src.Type)
		}
		res, err = u.unpackGit(ctx, key, *src.Git, opts)
	default:
		return nil, newError(KindInvalidSource, nil, "source type %q is not supported (check spec.source.type: Image, ConfigMaps, HTTP or Git)", src.Type)
	}
	if err != nil {
		log.V(1).Info("unpack failed", "error", err.Error())
		return nil, err
	}
	log.V(1).Info("unpacked", "dir", res.Dir, "unchanged", res.Unchanged)
	return res, nil
}

func missingMember(member string, t rukpakv1alpha1.SourceType) *Error {
	return newError(KindInvalidSource, nil, "spec.source.%s is required when spec.source.type is %s", member, t)
}

// Cleanup implements Unpacker: it removes key's content, and image content no other key uses.
func (u *DiskUnpacker) Cleanup(_ context.Context, key string) error {
	if u.hosts != nil {
		u.hosts.forget(key)
	}
	unlock := u.cache.keyLocks.lock(key)
	defer unlock()
	return u.cache.remove(key)
}

// Prune removes the content of every key for which keep returns false. Call it when a controller
// starts, with the keys of the objects that still exist, to drop content of objects deleted while
// it was not running.
func (u *DiskUnpacker) Prune(ctx context.Context, keep func(key string) bool) error {
	for _, key := range u.cache.keys() {
		if keep(key) {
			continue
		}
		if err := u.Cleanup(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// sameResolved reports whether a and b pin the same content. An HTTP response without ETag or
// Last-Modified pins nothing.
func sameResolved(a, b *rukpakv1alpha1.ResolvedSource) bool {
	if a == nil || b == nil || a.Type != b.Type {
		return false
	}
	switch a.Type {
	case rukpakv1alpha1.SourceTypeImage:
		return a.Image != nil && b.Image != nil && a.Image.Ref == b.Image.Ref
	case rukpakv1alpha1.SourceTypeGit:
		return a.Git != nil && b.Git != nil && a.Git.Repository == b.Git.Repository && a.Git.Commit == b.Git.Commit
	case rukpakv1alpha1.SourceTypeHTTP:
		if a.HTTP == nil || b.HTTP == nil || a.HTTP.URL != b.HTTP.URL {
			return false
		}
		if a.HTTP.ETag != "" || b.HTTP.ETag != "" {
			return a.HTTP.ETag == b.HTTP.ETag
		}
		return a.HTTP.LastModified != "" && a.HTTP.LastModified == b.HTTP.LastModified
	case rukpakv1alpha1.SourceTypeConfigMaps:
		if len(a.ConfigMaps) != len(b.ConfigMaps) {
			return false
		}
		for i := range a.ConfigMaps {
			if a.ConfigMaps[i] != b.ConfigMaps[i] {
				return false
			}
		}
		return true
	}
	return false
}

// reuse returns the content key already has when it was unpacked from the same spec
// (fingerprint) and resolved to the same content; Unchanged says whether that is also
// opts.Previous.
func (u *DiskUnpacker) reuse(key, fingerprint string, resolved rukpakv1alpha1.ResolvedSource, opts Options) *Result {
	rec := u.cache.lookup(key)
	if rec == nil || rec.Fingerprint != fingerprint || !sameResolved(&rec.Resolved, &resolved) {
		return nil
	}
	return &Result{Dir: u.cache.abs(rec.Dir), ResolvedSource: rec.Resolved, Unchanged: sameResolved(opts.Previous, &resolved)}
}
