package imagebuild

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushOption tunes Push.
type PushOption func(*pushOptions)

type pushOptions struct {
	insecure  bool
	keychain  authn.Keychain
	transport http.RoundTripper
}

// WithInsecure lets Push talk plain HTTP to the registry (name.Insecure). Registries on localhost
// and loopback addresses are reached over plain HTTP even without it.
func WithInsecure() PushOption {
	return func(o *pushOptions) { o.insecure = true }
}

// WithKeychain sets where registry credentials come from; the default is authn.DefaultKeychain
// (the docker/podman config of the user). Use authn.NewMultiKeychain to combine several.
func WithKeychain(kc authn.Keychain) PushOption {
	return func(o *pushOptions) { o.keychain = kc }
}

// WithTransport sets the HTTP transport, e.g. one that trusts a test registry's certificate.
func WithTransport(rt http.RoundTripper) PushOption {
	return func(o *pushOptions) { o.transport = rt }
}

// Push uploads img to ref (e.g. "localhost:5000/catalogs/demo:v1"; a reference without a tag gets
// "latest") and returns the pushed manifest's digest reference, repo@sha256:....
func Push(ctx context.Context, img v1.Image, ref string, opts ...PushOption) (name.Digest, error) {
	o := pushOptions{keychain: authn.DefaultKeychain}
	for _, opt := range opts {
		opt(&o)
	}

	var nameOpts []name.Option
	if o.insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image reference %q: %w (expected e.g. localhost:5000/catalogs/demo:v1)", ref, err)
	}

	digest, err := img.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("push %s: compute image digest: %w", r, err)
	}

	remoteOpts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(o.keychain),
	}
	if o.transport != nil {
		remoteOpts = append(remoteOpts, remote.WithTransport(o.transport))
	}
	if err := remote.Write(r, img, remoteOpts...); err != nil {
		return name.Digest{}, fmt.Errorf("push %s: %w%s", r, err, pushHint(err, o.insecure))
	}
	return r.Context().Digest(digest.String()), nil
}

// pushHint suggests a fix for the push errors people meet most.
func pushHint(err error, insecure bool) string {
	msg := err.Error()
	switch {
	case !insecure && strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return " (the registry speaks plain HTTP: pass WithInsecure())"
	case strings.Contains(msg, "UNAUTHORIZED") || strings.Contains(msg, "DENIED"):
		return " (check the registry credentials: docker login, or WithKeychain)"
	case strings.Contains(msg, "connection refused"):
		return " (is the registry running at that address?)"
	}
	return ""
}
