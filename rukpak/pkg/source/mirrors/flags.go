package mirrors

import (
	"flag"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Flags are the command-line flags of the mirror configuration, the same in catalogd and rukpak.
type Flags struct {
	// RegistriesConf is the path of a registries.conf file; empty for none.
	RegistriesConf string
	// MirrorSets enables reading ImageDigestMirrorSets and ImageTagMirrorSets.
	MirrorSets bool
}

// Bind registers --registries-conf and --image-mirror-sets.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.RegistriesConf, "registries-conf", "",
		"path of a registries.conf file (containers-registries.conf(5) version 2: [[registry]] prefix, location, insecure, blocked, mirror-by-digest-only, [[registry.mirror]]) that every image pull follows; read again when it changes; empty for none")
	fs.BoolVar(&f.MirrorSets, "image-mirror-sets", true,
		"follow the cluster's ImageDigestMirrorSets and ImageTagMirrorSets (config.openshift.io/v1) when the cluster serves them; listed at most every 30s")
}

// Provider returns the Provider the flags describe, reading the mirror sets through reader (a
// reader that asks the API server), or nil when neither is enabled. A registries.conf that cannot
// be read or parsed is an error now, so that the process does not start with it.
func (f *Flags) Provider(reader client.Reader) (*Provider, error) {
	p := &Provider{File: f.RegistriesConf}
	if f.MirrorSets {
		p.Reader = reader
	}
	if p.File == "" && p.Reader == nil {
		return nil, nil
	}
	if err := p.CheckFile(); err != nil {
		return nil, err
	}
	return p, nil
}
