package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

// Media types of Helm charts stored as OCI artifacts (`helm push`).
const (
	HelmConfigMediaType       types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartContentMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

const imageRefField = "spec.source.image.ref"

// imageSource is one Image source being unpacked from one endpoint: the registry its reference
// names, or a mirror of it.
type imageSource struct {
	spec rukpakv1alpha1.ImageSource
	what string // `image "quay.io/x:1"`, or `image "quay.io/x:1" (from mirror m.example.com/x:1)`
	ref  name.Reference
	opts []remote.Option
	tmp  string // directory for downloaded layers
	// retryAfter sees the registry's answers, for the Retry-After of a 429 or 503.
	retryAfter *retryAfterTransport
	// mirror names the configuration of a mirror endpoint (empty for the source), for hints.
	mirror string

	platform v1.Platform
	// responseTimeout is the transport's bound on waiting for an answer, for messages.
	responseTimeout time.Duration
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

func (u *DiskUnpacker) unpackImage(ctx context.Context, key string, spec rukpakv1alpha1.ImageSource, opts Options) (*Result, error) {
	what := fmt.Sprintf("image %q", spec.Ref)
	imageDir, err := cleanEntryName(strings.TrimPrefix(opts.ImageDir, "/"))
	if err != nil {
		return nil, newError(KindInternal, err, "source: Options.ImageDir %q: %v", opts.ImageDir, err)
	}
	var nameOpts []name.Option
	if spec.InsecureSkipTLSVerify {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(spec.Ref, nameOpts...)
	if err != nil {
		return nil, newError(KindInvalidSource, err, "%s is not a valid image reference: %v (check %s; expected e.g. quay.io/org/catalog:v1 or quay.io/org/catalog@sha256:<digest>)", what, err, imageRefField)
	}
	// A digest reference needs no network when its content is cached, wherever it came from;
	// unless a signature is required, which is checked on every unpack (verify.go).
	if d, ok := ref.(name.Digest); ok && spec.Verify == nil && u.cfg.RequireSignaturesSecret == "" {
		if res, err := u.cachedImage(ctx, key, spec, d, imageDir, opts); res != nil || err != nil {
			return res, err
		}
	}
	plan, err := u.planImage(ctx, ref, what)
	if err != nil {
		return nil, err
	}
	keychain, err := u.imageKeychain(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	policies, err := u.imagePolicies(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	var failures []endpointFailure
	for i, ep := range plan.Endpoints {
		res, err := u.unpackImageFrom(ctx, key, spec, ref, ep, keychain, policies, imageDir, opts)
		if err == nil {
			return res, nil
		}
		if !plan.Mirrored() || !tryNextEndpoint(ctx, err) {
			return nil, err
		}
		failures = append(failures, endpointFailure{ep: ep, err: asError(err, KindUnreachable, "%s", what)})
		if ctx.Err() != nil {
			return nil, endpointsError(what, plan, failures, plan.Endpoints[i+1:])
		}
	}
	return nil, endpointsError(what, plan, failures, nil)
}

// unpackImageFrom resolves and pulls the image at one endpoint. The resolved reference is the
// original repository at the digest found (so that it names the image whatever mirror served it);
// ResolvedImageSource.Mirror names the endpoint when it is not that repository.
func (u *DiskUnpacker) unpackImageFrom(ctx context.Context, key string, spec rukpakv1alpha1.ImageSource, orig name.Reference, ep mirrors.Endpoint,
	keychain authn.Keychain, policies []imagePolicy, imageDir string, opts Options) (*Result, error) {
	s := &imageSource{spec: spec, what: fmt.Sprintf("image %q", spec.Ref), tmp: u.cache.abs(tmpDir), platform: *u.cfg.Platform,
		responseTimeout: u.cfg.Transport.ResponseHeaderTimeout}
	insecure := ep.Insecure || (!ep.Mirror && spec.InsecureSkipTLSVerify)
	if ep.Mirror {
		s.what = fmt.Sprintf("image %q (from mirror %s)", spec.Ref, ep.Ref)
		s.mirror = ep.Origin
	}
	ref := orig
	if ep.Ref != orig.String() || insecure != spec.InsecureSkipTLSVerify {
		var nameOpts []name.Option
		if insecure {
			nameOpts = append(nameOpts, name.Insecure)
		}
		var err error
		if ref, err = name.ParseReference(ep.Ref, nameOpts...); err != nil {
			return nil, newError(KindInvalidSource, err, "%s: the endpoint %s that the registry mirror configuration (%s) makes of it is not a valid image reference: %v (check that configuration)", s.what, ep.Ref, ep.Origin, err)
		}
	}
	s.ref = ref
	s.retryAfter = &retryAfterTransport{}
	var tr *http.Transport
	s.opts, tr = u.remoteOptions(ctx, keychain, insecure, s.retryAfter)
	defer tr.CloseIdleConnections()
	return u.limitHost(ctx, key, s, func() (*Result, error) {
		return u.fetchImage(ctx, key, spec, orig, s, policies, imageDir, opts)
	})
}

// fetchImage resolves, verifies and pulls the image of s, or finds its content in the cache.
func (u *DiskUnpacker) fetchImage(ctx context.Context, key string, spec rukpakv1alpha1.ImageSource, orig name.Reference, s *imageSource,
	policies []imagePolicy, imageDir string, opts Options) (*Result, error) {
	ref := s.ref
	digest, err := s.resolve(ctx)
	if err != nil {
		return nil, err
	}
	// A digest reference names itself as the spec wrote it (as cachedImage does).
	resolvedRef := orig.Context().Digest(digest.DigestStr()).String()
	if d, ok := orig.(name.Digest); ok {
		resolvedRef = d.String()
	}
	resolved := rukpakv1alpha1.ResolvedSource{
		Type:  rukpakv1alpha1.SourceTypeImage,
		Image: &rukpakv1alpha1.ResolvedImageSource{Ref: resolvedRef, Requested: spec.Ref},
	}
	if ref.Context().Name() != orig.Context().Name() {
		resolved.Image.Mirror = digest.String()
	}
	// Before the cache and the pull: only the verified digest is used from here on. Every policy
	// must accept it; status records the first (the spec's own, when it has one).
	for i, p := range policies {
		v, err := s.verify(ctx, digest, p, opts.Previous)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			resolved.Image.Verified = v
		}
	}
	fingerprint := "image\x00" + imageDir
	entry := imageEntry(digest.DigestStr(), imageDir)
	unlock := u.cache.entryLocks.lock(entry)
	defer unlock()

	log := logr.FromContextOrDiscard(ctx).WithValues("image", spec.Ref, "digest", digest.DigestStr())
	if resolved.Image.Mirror != "" {
		log = log.WithValues("mirror", resolved.Image.Mirror)
	}
	if dir, ok, err := u.cache.useImage(key, entry, resolved, fingerprint); err != nil || ok {
		if err != nil {
			return nil, err
		}
		log.V(2).Info("image content found in cache")
		return &Result{Dir: dir, ResolvedSource: resolved, Unchanged: sameResolved(opts.Previous, &resolved)}, nil
	}

	staged, err := u.cache.stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged)
	start := time.Now()
	if err := u.pullImage(ctx, s, digest, imageDir, staged); err != nil {
		return nil, err
	}
	log.V(1).Info("pulled image", "duration", time.Since(start).Round(time.Millisecond).String())
	dir, err := u.cache.commitImage(key, entry, staged, resolved, fingerprint)
	if err != nil {
		return nil, err
	}
	return &Result{Dir: dir, ResolvedSource: resolved}, nil
}

// imageKeychain reads the pull secret, if any. Its credentials are looked up by registry host, so
// a mirror gets credentials only when the Secret has an entry for the mirror's host.
func (u *DiskUnpacker) imageKeychain(ctx context.Context, spec rukpakv1alpha1.ImageSource, opts Options) (authn.Keychain, error) {
	if spec.PullSecret == "" {
		return anonymousKeychain{}, nil
	}
	secret, err := u.getSecret(ctx, opts.Namespace, spec.PullSecret, "spec.source.image.pullSecret")
	if err != nil {
		return nil, err
	}
	return pullSecretKeychain(secret)
}

// remoteOptions builds the registry options: transport (seen through ra; insecure skips TLS
// verification), credentials, platform and a short retry policy: the controller retries too, with
// backoff.
//
// go-containerregistry retries a request once, after about 200 ms, when the registry answers 408,
// 500, 502, 503 or 504 or the connection breaks; so one registry call of one Unpack is at most two
// requests. A 429 is not retried here: the registry asked to slow down, and the controller waits
// (for its Retry-After, or with backoff). A connection that is refused is not retried here either.
func (u *DiskUnpacker) remoteOptions(ctx context.Context, keychain authn.Keychain, insecure bool, ra *retryAfterTransport) ([]remote.Option, *http.Transport) {
	tr := u.cfg.Transport.Clone()
	if insecure {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{}
		}
		tr.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // asked for by spec.source.image.insecureSkipTLSVerify or a mirror's insecure = true
	}
	ra.RoundTripper = tr
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(ra),
		remote.WithAuthFromKeychain(keychain),
		remote.WithPlatform(*u.cfg.Platform),
		remote.WithUserAgent("olmv1-source"),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 2}),
		remote.WithRetryStatusCodes(http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout),
	}, tr
}

// retryAfterTransport remembers the Retry-After header of the registry's last 429 or 503 answer,
// which go-containerregistry's errors do not carry.
type retryAfterTransport struct {
	http.RoundTripper

	mu   sync.Mutex
	last time.Duration
}

func (t *retryAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		d := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		t.mu.Lock()
		t.last = d
		t.mu.Unlock()
	}
	return resp, err
}

// get returns the Retry-After of the last 429 or 503 answer (zero when it had none).
func (t *retryAfterTransport) get() time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

type anonymousKeychain struct{}

func (anonymousKeychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return authn.Anonymous, nil
}

// resolve returns the digest the reference points to; a digest reference needs no network.
func (s *imageSource) resolve(ctx context.Context) (name.Digest, error) {
	if d, ok := s.ref.(name.Digest); ok {
		return d, nil
	}
	desc, err := remote.Head(s.ref, s.opts...)
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && (terr.StatusCode == http.StatusMethodNotAllowed || terr.StatusCode == http.StatusBadRequest) {
			// Some registries answer HEAD poorly; GET tells the same.
			var gdesc *remote.Descriptor
			if gdesc, err = remote.Get(s.ref, s.opts...); err == nil {
				desc = &gdesc.Descriptor
			}
		}
	}
	if err != nil {
		return name.Digest{}, s.classify(ctx, err)
	}
	return s.ref.Context().Digest(desc.Digest.String()), nil
}

// pullImage writes directory imageDir of the image into dir; a Helm chart artifact is unpacked as
// its chart directory.
func (u *DiskUnpacker) pullImage(ctx context.Context, s *imageSource, digest name.Digest, imageDir, dir string) error {
	desc, err := remote.Get(digest, s.opts...)
	if err != nil {
		return s.classify(ctx, err)
	}
	img, err := desc.Image()
	if err != nil {
		if desc.MediaType.IsIndex() {
			return newError(KindInvalidContent, err, "%s is an image index without an image for %s (check %s): %v", s.what, platformString(s.platform), imageRefField, err)
		}
		return s.classify(ctx, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return s.classify(ctx, err)
	}
	c, err := openContentDir(dir, u.cfg.Limits, s.what)
	if err != nil {
		return err
	}
	defer c.close()
	if manifest.Config.MediaType == HelmConfigMediaType {
		return s.unpackHelmChart(ctx, img, manifest, imageDir, c)
	}
	switch manifest.Config.MediaType {
	case types.DockerConfigJSON, types.OCIConfigJSON, "":
	default:
		return newError(KindInvalidContent, nil, "%s is an OCI artifact with config media type %q, not a container image or Helm chart (check %s)", s.what, manifest.Config.MediaType, imageRefField)
	}

	imageRoot := imageDir
	c.absRoot = &imageRoot
	layers, err := img.Layers()
	if err != nil {
		return s.classify(ctx, err)
	}
	var read int64
	found := imageDir == ""
	for _, layer := range layers {
		mt, err := layer.MediaType()
		if err != nil {
			return s.classify(ctx, err)
		}
		if !mt.IsLayer() {
			return newError(KindInvalidContent, nil, "%s has a layer of media type %q, which is not a filesystem layer (check %s)", s.what, mt, imageRefField)
		}
		if mt == types.DockerForeignLayer {
			continue // non-distributable (Windows base) layers are never content
		}
		f, err := s.extractLayer(ctx, layer, c, imageDir, true, &read)
		if err != nil {
			return err
		}
		found = found || f
	}
	if !found {
		return newError(KindInvalidContent, nil, "%s has no /%s directory (is it the right kind of image? check %s)", s.what, imageDir, imageRefField)
	}
	return c.finish()
}

// extractLayer downloads a layer to a temporary file, where its digest is verified before any of
// its bytes are interpreted, and then extracts it.
func (s *imageSource) extractLayer(ctx context.Context, layer v1.Layer, c *contentDir, imageDir string, whiteouts bool, read *int64) (bool, error) {
	if size, err := layer.Size(); err == nil && size > c.limits.MaxBytes {
		return false, c.tooLarge()
	}
	rc, err := layer.Compressed()
	if err != nil {
		return false, s.classify(ctx, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(s.tmp, "layer-")
	if err != nil {
		return false, newError(KindInternal, err, "%s: creating a temporary file: %v", s.what, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(rc, c.limits.MaxBytes+1))
	if err != nil {
		return false, s.classify(ctx, err)
	}
	if n > c.limits.MaxBytes {
		return false, c.tooLarge()
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, newError(KindInternal, err, "%s: %v", s.what, err)
	}
	opts := tarOptions{dir: imageDir, streamErr: func(err error) *Error { return s.classify(ctx, err) }}
	if whiteouts {
		opts.layer = newLayerState()
	}
	return extractArchive(ctx, f, c, opts, read)
}

// unpackHelmChart extracts the chart archive of a Helm OCI artifact so that the content directory
// is the chart directory (Chart.yaml at its root).
func (s *imageSource) unpackHelmChart(ctx context.Context, img v1.Image, m *v1.Manifest, imageDir string, c *contentDir) error {
	if imageDir != "" {
		return newError(KindInvalidContent, nil, "%s is a Helm chart, which has no /%s directory (is it the right kind of image? check %s)", s.what, imageDir, imageRefField)
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		return s.classify(ctx, err)
	}
	var meta struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Name == "" || strings.ContainsAny(meta.Name, "/\\") || meta.Name == ".." {
		return newError(KindInvalidContent, err, "%s is a Helm chart whose config does not name the chart (check %s)", s.what, imageRefField)
	}
	var chartLayer *v1.Descriptor
	for i := range m.Layers {
		if m.Layers[i].MediaType == HelmChartContentMediaType {
			if chartLayer != nil {
				return newError(KindInvalidContent, nil, "%s is a Helm chart with more than one chart layer", s.what)
			}
			chartLayer = &m.Layers[i]
		}
	}
	if chartLayer == nil {
		return newError(KindInvalidContent, nil, "%s is a Helm chart artifact without a %s layer (check %s)", s.what, HelmChartContentMediaType, imageRefField)
	}
	layer, err := img.LayerByDigest(chartLayer.Digest)
	if err != nil {
		return s.classify(ctx, err)
	}
	var read int64
	found, err := s.extractLayer(ctx, layer, c, meta.Name, false, &read)
	if err != nil {
		return err
	}
	if !found {
		return newError(KindInvalidContent, nil, "%s: the chart archive has no %s/ directory, the chart's name", s.what, meta.Name)
	}
	return c.finish()
}

// classify turns a registry error into an Error that says what to check.
func (s *imageSource) classify(ctx context.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	registry := s.ref.Context().RegistryStr()
	if ctx.Err() != nil {
		return timeoutError(ctx, err, timeoutOf(ctx), fmt.Sprintf("%s from registry %s", s.what, registry), imageRefField)
	}
	msg := err.Error()
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch {
		case terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden || hasCode(terr, transport.UnauthorizedErrorCode, transport.DeniedErrorCode):
			hint := "the registry requires credentials: set spec.source.image.pullSecret to a kubernetes.io/dockerconfigjson Secret"
			switch {
			case s.mirror != "" && s.spec.PullSecret != "":
				hint = fmt.Sprintf("a pull secret applies to a mirror only through an entry for the mirror's host: check the credentials for %s in Secret %q, named by spec.source.image.pullSecret", registry, s.spec.PullSecret)
			case s.mirror != "":
				hint = fmt.Sprintf("the mirror requires credentials: set spec.source.image.pullSecret to a kubernetes.io/dockerconfigjson Secret with an entry for %s", registry)
			case s.spec.PullSecret != "":
				hint = fmt.Sprintf("check the credentials for %s in Secret %q, named by spec.source.image.pullSecret", registry, s.spec.PullSecret)
			}
			return newError(KindUnauthorized, err, "registry %s refused access to %s (%d %s): %s", registry, s.what, terr.StatusCode, http.StatusText(terr.StatusCode), hint)
		case terr.StatusCode == http.StatusNotFound || hasCode(terr, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode):
			if s.mirror != "" {
				return newError(KindNotFound, err, "%s not found in registry %s (copy the image to the mirror, or check its location in %s)", s.what, registry, s.mirror)
			}
			return newError(KindNotFound, err, "%s not found in registry %s (check %s)", s.what, registry, imageRefField)
		case terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= 500:
			var ra time.Duration
			if terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode == http.StatusServiceUnavailable {
				ra = s.retryAfter.get()
			}
			e := newError(KindUnreachable, err, "registry %s answered %d %s for %s; %s", registry, terr.StatusCode, http.StatusText(terr.StatusCode), s.what, retryLater(ra))
			e.RetryAfter = ra
			return e
		}
	}
	if strings.Contains(msg, "timeout awaiting response headers") {
		// Before the TLS and plain-HTTP cases: probing https and then http, the client may have
		// met both a plain-HTTP answer and the hang.
		e := newError(KindUnreachable, err, "registry %s accepted the connection for %s but did not answer within %s (is it hung or overloaded? check %s); %s",
			registry, s.what, s.responseTimeout, imageRefField, retryLater(0))
		e.unanswered = true
		return e
	}
	switch {
	case strings.Contains(msg, "unsupported MediaType"):
		return newError(KindInvalidContent, err, "%s: %v (check %s)", s.what, err, imageRefField)
	case strings.Contains(msg, "does not match requested digest") || strings.Contains(msg, "error verifying sha256 checksum") ||
		strings.Contains(msg, "error verifying size") || strings.Contains(msg, "does not match expected size"):
		return newError(KindDigestMismatch, err, "%s: content from registry %s does not match its digest (corrupted in transit, or the registry serves different content than it claims): %v", s.what, registry, err)
	case s.mirror != "" && isTLSError(err):
		return newError(KindUnreachable, err, "%s: the TLS certificate of mirror %s is not trusted: %v (set insecure = true for this mirror in %s only for a mirror on a trusted network)", s.what, registry, err, s.mirror)
	case s.mirror != "" && strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return newError(KindUnreachable, err, "%s: mirror %s speaks plain HTTP (set insecure = true for this mirror in %s to allow it)", s.what, registry, s.mirror)
	case isTLSError(err):
		return newError(KindUnreachable, err, "%s: the TLS certificate of registry %s is not trusted: %v (use spec.source.image.insecureSkipTLSVerify only for a registry on a trusted network)", s.what, registry, err)
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return newError(KindUnreachable, err, "%s: registry %s speaks plain HTTP (set spec.source.image.insecureSkipTLSVerify to allow it)", s.what, registry)
	}
	var nerr net.Error
	if errors.As(err, &nerr) || strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") {
		return newError(KindUnreachable, err, "cannot reach registry %s for %s: %v; %s", registry, s.what, err, retryLater(0))
	}
	return newError(KindUnreachable, err, "fetching %s from registry %s: %v; %s", s.what, registry, err, retryLater(0))
}

func hasCode(terr *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range terr.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

func isTLSError(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// timeoutKey carries the timeout of an Unpack in its context, for messages.
type timeoutKey struct{}

func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(timeoutKey{}).(time.Duration); ok {
		return d
	}
	return DefaultTimeout
}
