package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

// MirrorConfig supplies the registry mirror configuration in force (a *mirrors.Provider).
type MirrorConfig interface {
	Config(ctx context.Context) (*mirrors.Config, error)
}

// imageOf splits a reference for mirror matching; Docker Hub is docker.io, as registries.conf
// names it.
func imageOf(ref name.Reference) mirrors.Image {
	host := ref.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	img := mirrors.Image{Repository: host + "/" + ref.Context().RepositoryStr()}
	if d, ok := ref.(name.Digest); ok {
		img.Digest = d.DigestStr()
	} else {
		img.Tag = ref.Identifier()
	}
	return img
}

// planImage returns the endpoints to pull ref from, in order.
func (u *DiskUnpacker) planImage(ctx context.Context, ref name.Reference, what string) (mirrors.Plan, error) {
	img := imageOf(ref)
	if u.cfg.Mirrors == nil {
		return (*mirrors.Config)(nil).Plan(img), nil
	}
	cfg, err := u.cfg.Mirrors.Config(ctx)
	if err != nil {
		kind := KindInvalidSource // a file that is missing or invalid
		var le *mirrors.ListError
		if errors.As(err, &le) {
			kind = KindUnreachable
			if le.Forbidden {
				kind = KindUnauthorized
			}
		}
		e := newError(kind, err, "%s: cannot read the registry mirror configuration, so it is not pulled (a blocked registry could be contacted otherwise): %v", what, err)
		e.Retryable = true
		return mirrors.Plan{}, e
	}
	plan := cfg.Plan(img)
	if len(plan.Endpoints) == 0 {
		return plan, blockedError(what, plan)
	}
	if plan.Mirrored() {
		eps := make([]string, 0, len(plan.Endpoints))
		for _, ep := range plan.Endpoints {
			eps = append(eps, ep.Ref)
		}
		logr.FromContextOrDiscard(ctx).V(1).Info("registry mirror configuration applies", "image", img.String(),
			"prefix", plan.Matched.Prefix, "origin", plan.Matched.Origin, "endpoints", eps)
	}
	return plan, nil
}

// blockedError explains that the source is blocked and no mirror serves this reference.
func blockedError(what string, plan mirrors.Plan) *Error {
	kind := "tag"
	if plan.Image.IsDigest() {
		kind = "digest"
	}
	unused := ""
	if len(plan.Unused) > 0 {
		unused = fmt.Sprintf(" (its mirrors serve other references only: %s)", strings.Join(plan.Unused, ", "))
	}
	fixes := []string{fmt.Sprintf("add a mirror that serves %s references for prefix %q", kind, plan.Matched.Prefix)}
	if !plan.Image.IsDigest() {
		fixes = append(fixes, "use a digest reference (repository@sha256:...) in "+imageRefField)
	}
	fixes = append(fixes, "unblock the registry")
	blocked := "registry " + plan.Matched.Prefix
	if strings.Contains(strings.TrimPrefix(plan.Matched.Prefix, "*."), "/") {
		blocked = "repository " + plan.Matched.Prefix
	}
	e := newError(KindInvalidSource, nil, "%s: %s is blocked by %s, and no mirror serves this %s reference%s; %s",
		what, blocked, plan.Matched.BlockedBy, kind, unused, orList(fixes))
	e.Retryable = true // the mirror configuration is read again at the next pull
	return e
}

// orList joins "a", "b, or c".
func orList(items []string) string {
	if len(items) < 3 {
		return strings.Join(items, " or ")
	}
	return strings.Join(items[:len(items)-1], ", ") + ", or " + items[len(items)-1]
}

// endpointFailure is why one endpoint did not give the image.
type endpointFailure struct {
	ep  mirrors.Endpoint
	err *Error
}

// tryNextEndpoint reports whether the next endpoint may succeed where this one failed: not when
// the content itself is bad (a digest names the same bytes everywhere), nor for local failures.
func tryNextEndpoint(ctx context.Context, err error) bool {
	switch KindOf(err) {
	case KindInternal, KindTooLarge, KindInvalidContent:
		return false
	}
	return !errors.Is(ctx.Err(), context.Canceled)
}

// endpointsError names every endpoint tried and why each failed, and those not tried.
func endpointsError(what string, plan mirrors.Plan, failures []endpointFailure, notTried []mirrors.Endpoint) *Error {
	var b strings.Builder
	endpoints := fmt.Sprintf("any of its %d endpoints", len(plan.Endpoints))
	if len(plan.Endpoints) == 1 {
		endpoints = "its only endpoint"
	}
	fmt.Fprintf(&b, "%s could not be pulled from %s (registry mirror configuration for prefix %q, from %s; mirrors are tried in order, then the source):",
		what, endpoints, plan.Matched.Prefix, plan.Matched.Origin)
	var (
		last       *Error
		retryable  bool
		retryAfter time.Duration
	)
	for i, f := range failures {
		fmt.Fprintf(&b, " %d) %s: %s;", i+1, describeEndpoint(f.ep), f.err.Message)
		last = f.err
		retryable = retryable || f.err.Retryable
		retryAfter = max(retryAfter, f.err.RetryAfter)
	}
	for _, ep := range notTried {
		fmt.Fprintf(&b, " not tried: %s;", describeEndpoint(ep))
	}
	if plan.Blocked() {
		fmt.Fprintf(&b, " the source %s is not contacted: it is blocked by %s;", plan.Matched.Prefix, plan.Matched.BlockedBy)
	}
	msg := strings.TrimSuffix(b.String(), ";")
	e := newError(last.Kind, last, "%s", msg)
	e.Retryable, e.RetryAfter = retryable, retryAfter
	return e
}

func describeEndpoint(ep mirrors.Endpoint) string {
	if ep.Mirror {
		return fmt.Sprintf("mirror %s (from %s)", ep.Ref, ep.Origin)
	}
	return "source " + ep.Ref
}

// cachedImage returns the cached content of a digest reference, without contacting any registry;
// nil when it is not cached. Mirror is where the cached content was pulled from.
func (u *DiskUnpacker) cachedImage(ctx context.Context, key string, spec rukpakv1alpha1.ImageSource, d name.Digest, imageDir string, opts Options) (*Result, error) {
	entry := imageEntry(d.DigestStr(), imageDir)
	unlock := u.cache.entryLocks.lock(entry)
	defer unlock()
	resolved := rukpakv1alpha1.ResolvedSource{
		Type:  rukpakv1alpha1.SourceTypeImage,
		Image: &rukpakv1alpha1.ResolvedImageSource{Ref: d.String(), Requested: spec.Ref, Mirror: u.cache.pulledFrom(key, entry, d.String())},
	}
	dir, ok, err := u.cache.useImage(key, entry, resolved, "image\x00"+imageDir)
	if err != nil || !ok {
		return nil, err
	}
	logr.FromContextOrDiscard(ctx).V(2).Info("image content found in cache", "image", spec.Ref, "digest", d.DigestStr())
	return &Result{Dir: dir, ResolvedSource: resolved, Unchanged: sameResolved(opts.Previous, &resolved)}, nil
}

// pulledFrom returns the mirror that the records of image entry say it came from, preferring
// key's own record: empty when it came from the source.
func (c *cache) pulledFrom(key, entry, ref string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.records[key]; ok && r.Dir == entry && r.Resolved.Image != nil && r.Resolved.Image.Ref == ref {
		return r.Resolved.Image.Mirror
	}
	for _, r := range c.records {
		if r.Dir == entry && r.Resolved.Image != nil && r.Resolved.Image.Mirror != "" {
			return r.Resolved.Image.Mirror
		}
	}
	return ""
}
