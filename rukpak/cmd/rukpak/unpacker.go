package main

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/boot"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
)

// unprovenHostPulls is how many image pulls may be in flight at once to a registry host from which
// no pull has succeeded yet, or whose last request went unanswered: a registry that accepts
// connections and never answers holds this many of the --max-concurrent-reconciles workers, however
// many bundles it hosts; the other BundleDeployments on it wait (UnpackPending) without holding one.
const unprovenHostPulls = 1

// newUnpacker builds the source.Unpacker. reader must not be the manager's label-scoped cache: the
// ConfigMaps and Secrets that sources name carry no rukpak labels (and the mirror sets are listed
// through it, without a watch).
// Registries, HTTP sources and git servers are reached with the TLS profile tp. requireSignatures
// is --require-image-signatures (a Secret of rukpak's namespace, or ""); timeout and
// responseTimeout are --unpack-timeout and --source-response-timeout.
func newUnpacker(cacheDir string, reader client.Reader, mf mirrors.Flags, tp boot.TLSProfile, requireSignatures string,
	timeout, responseTimeout time.Duration) (source.Unpacker, error) {
	cfg := source.Config{CacheDir: cacheDir, Client: reader, Log: ctrl.Log.WithName("source"), ClientTLS: tp.Apply, RequireSignaturesSecret: requireSignatures,
		Timeout: timeout, ResponseTimeout: responseTimeout, HostLimits: source.HostLimits{Unproven: unprovenHostPulls}}
	mp, err := mf.Provider(reader)
	if err != nil {
		return nil, err
	}
	if mp != nil {
		cfg.Mirrors = mp
	}
	return source.New(cfg)
}
