package boot

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// TLS profiles: one setting for every TLS server and outgoing TLS client of a controller (metrics,
// catalogd's content endpoint and CatalogMetadata API, registry, HTTP and git pulls). The named
// profiles follow Mozilla's server-side TLS guidelines and OpenShift's TLSSecurityProfile, mapped to
// what Go's crypto/tls implements (docs/tls.md lists what Go lacks). The client to the kube-apiserver
// keeps client-go's own TLS settings.

// TLSProfileType names a TLS profile.
type TLSProfileType string

const (
	// TLSProfileOld is TLS 1.0 or later with the wider list of suites, for very old clients.
	TLSProfileOld TLSProfileType = "Old"
	// TLSProfileIntermediate is TLS 1.2 or later with the ECDHE AEAD suites (the default).
	TLSProfileIntermediate TLSProfileType = "Intermediate"
	// TLSProfileModern is TLS 1.3 only.
	TLSProfileModern TLSProfileType = "Modern"
	// TLSProfileCustom takes its minimum version, suites and curves from --tls-min-version,
	// --tls-cipher-suites and --tls-curves.
	TLSProfileCustom TLSProfileType = "Custom"
)

// TLSProfile is the minimum version, TLS 1.0–1.2 cipher suites and key exchanges (curves) of every TLS
// server and outgoing TLS client of a controller. The zero TLSProfile is the Intermediate profile.
type TLSProfile struct {
	Type TLSProfileType
	// MinVersion is a crypto/tls version constant, e.g. tls.VersionTLS12.
	MinVersion uint16
	// CipherSuites are the TLS 1.0–1.2 suites (Go always enables all three TLS 1.3 suites and lets
	// nobody choose among them); empty when MinVersion is TLS 1.3.
	CipherSuites []uint16
	// Curves are the key exchanges offered and accepted. Go orders them itself, hybrid post-quantum
	// key exchanges first, whatever the order here; the ML-KEM hybrids are used with TLS 1.3 only.
	Curves []tls.CurveID
}

// defaultCurves are the key exchanges of every named profile: Mozilla's X25519, P-256 and P-384,
// with the X25519MLKEM768 post-quantum hybrid (TLS 1.3) in front.
var defaultCurves = []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256, tls.CurveP384}

// intermediateSuites are the ECDHE AEAD suites: forward secrecy and authenticated encryption.
var intermediateSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// oldSuites add to intermediateSuites the ECDHE CBC suites, the RSA key exchange suites and 3DES of
// the Old profile that Go implements.
var oldSuites = append(slices.Clone(intermediateSuites),
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
)

// NamedTLSProfile returns the Old, Intermediate or Modern profile.
func NamedTLSProfile(t TLSProfileType) (TLSProfile, error) {
	switch t {
	case TLSProfileOld:
		return TLSProfile{Type: t, MinVersion: tls.VersionTLS10, CipherSuites: slices.Clone(oldSuites), Curves: slices.Clone(defaultCurves)}, nil
	case TLSProfileIntermediate, "":
		return TLSProfile{Type: TLSProfileIntermediate, MinVersion: tls.VersionTLS12, CipherSuites: slices.Clone(intermediateSuites), Curves: slices.Clone(defaultCurves)}, nil
	case TLSProfileModern:
		return TLSProfile{Type: t, MinVersion: tls.VersionTLS13, Curves: slices.Clone(defaultCurves)}, nil
	}
	return TLSProfile{}, fmt.Errorf("--tls-profile %q: use Old, Intermediate, Modern or Custom", t)
}

// orDefault is p, or the Intermediate profile for the zero TLSProfile.
func (p TLSProfile) orDefault() TLSProfile {
	if p.MinVersion == 0 {
		d, _ := NamedTLSProfile(TLSProfileIntermediate)
		return d
	}
	return p
}

// Apply sets c's minimum version, cipher suites and curves from the profile; it leaves certificates,
// roots, client authentication and protocols alone.
func (p TLSProfile) Apply(c *tls.Config) {
	p = p.orDefault()
	c.MinVersion = p.MinVersion
	c.CipherSuites = slices.Clone(p.CipherSuites)
	c.CurvePreferences = slices.Clone(p.Curves)
}

// ServerConfig is a new server configuration with the profile applied (certificates still to set).
func (p TLSProfile) ServerConfig() *tls.Config {
	c := &tls.Config{}
	p.Apply(c)
	return c
}

// ClientConfig is a new client configuration with the profile applied (system roots).
func (p TLSProfile) ClientConfig() *tls.Config {
	return p.ServerConfig()
}

// String describes the profile for logs, e.g. "Modern (TLS 1.3+, curves X25519MLKEM768,X25519,…)".
func (p TLSProfile) String() string {
	p = p.orDefault()
	curves := make([]string, len(p.Curves))
	for i, c := range p.Curves {
		curves[i] = c.String()
	}
	s := fmt.Sprintf("%s (%s+", p.Type, tls.VersionName(p.MinVersion))
	if len(p.CipherSuites) > 0 {
		s += fmt.Sprintf(", %d TLS 1.0–1.2 suites", len(p.CipherSuites))
	}
	return s + ", curves " + strings.Join(curves, ",") + ")"
}

// TLSFlags are the --tls-* flags as given; Profile turns them into a TLSProfile.
type TLSFlags struct {
	Profile, MinVersion, CipherSuites, Curves string
}

// Bind registers --tls-profile, --tls-min-version, --tls-cipher-suites and --tls-curves on fs.
func (f *TLSFlags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.Profile, "tls-profile", string(TLSProfileIntermediate),
		"TLS profile of every TLS server (metrics; catalogd's content endpoint and CatalogMetadata API) and outgoing client (image, HTTP and git sources; not the kube-apiserver client): Old (TLS 1.0+), Intermediate (TLS 1.2+, ECDHE AEAD suites), Modern (TLS 1.3 only) or Custom (see --tls-min-version, --tls-cipher-suites, --tls-curves)")
	fs.StringVar(&f.MinVersion, "tls-min-version", "",
		"with --tls-profile=Custom: minimum TLS version, VersionTLS10, VersionTLS11, VersionTLS12 (default) or VersionTLS13")
	fs.StringVar(&f.CipherSuites, "tls-cipher-suites", "",
		"with --tls-profile=Custom: comma-separated TLS 1.0–1.2 cipher suites by IANA name, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (default: Intermediate's); TLS 1.3 suites are always enabled")
	fs.StringVar(&f.Curves, "tls-curves", "",
		"with --tls-profile=Custom: comma-separated key exchanges, e.g. X25519MLKEM768,X25519,CurveP256 (default: X25519MLKEM768,X25519,CurveP256,CurveP384)")
}

// TLSProfile resolves the flags: a named profile, or Custom built from the other three flags (each
// defaulting to Intermediate's). The other three flags are refused with a named profile.
func (f TLSFlags) TLSProfile() (TLSProfile, error) {
	t := TLSProfileType(f.Profile)
	if t != TLSProfileCustom {
		var set []string
		for _, s := range []struct{ flag, value string }{
			{"--tls-min-version", f.MinVersion}, {"--tls-cipher-suites", f.CipherSuites}, {"--tls-curves", f.Curves},
		} {
			if s.value != "" {
				set = append(set, s.flag)
			}
		}
		if len(set) > 0 {
			verb, them := "need", "them"
			if len(set) == 1 {
				verb, them = "needs", "it"
			}
			return TLSProfile{}, fmt.Errorf("%s %s --tls-profile=Custom (the profile is %q): drop %s, or set --tls-profile=Custom", strings.Join(set, ", "), verb, f.Profile, them)
		}
		return NamedTLSProfile(t)
	}
	p, _ := NamedTLSProfile(TLSProfileIntermediate)
	p.Type = TLSProfileCustom
	var err error
	if f.MinVersion != "" {
		if p.MinVersion, err = ParseTLSVersion(f.MinVersion); err != nil {
			return TLSProfile{}, err
		}
	}
	if f.Curves != "" {
		if p.Curves, err = ParseTLSCurves(f.Curves); err != nil {
			return TLSProfile{}, err
		}
	}
	if f.CipherSuites != "" {
		if p.CipherSuites, err = ParseTLSCipherSuites(f.CipherSuites); err != nil {
			return TLSProfile{}, err
		}
	}
	if p.MinVersion == tls.VersionTLS13 {
		if f.CipherSuites != "" && len(p.CipherSuites) > 0 {
			return TLSProfile{}, errors.New("--tls-cipher-suites lists TLS 1.0–1.2 suites, which --tls-min-version=VersionTLS13 never uses: drop them, or lower --tls-min-version")
		}
		p.CipherSuites = nil
	} else if len(p.CipherSuites) == 0 {
		return TLSProfile{}, fmt.Errorf("--tls-cipher-suites lists no TLS 1.0–1.2 suite, which --tls-min-version=%s needs (TLS 1.3 suites are always enabled): add some, e.g. %s, or set --tls-min-version=VersionTLS13",
			versionFlagName(p.MinVersion), tls.CipherSuiteName(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256))
	}
	return p, nil
}

var tlsVersions = []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13}

// versionFlagName is the --tls-min-version spelling of v, e.g. VersionTLS12.
func versionFlagName(v uint16) string {
	return "VersionTLS1" + strings.TrimPrefix(tls.VersionName(v), "TLS 1.")
}

// ParseTLSVersion parses VersionTLS10 … VersionTLS13 (OpenShift's spelling); "TLS 1.2", "TLS1.2",
// "TLSv1.2" and "1.2" are accepted too.
func ParseTLSVersion(s string) (uint16, error) {
	norm := strings.ToUpper(strings.NewReplacer(" ", "", ".", "").Replace(s))
	norm = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(norm, "VERSION"), "TLS"), "V")
	for _, v := range tlsVersions {
		if norm == "1"+strings.TrimPrefix(tls.VersionName(v), "TLS 1.") {
			return v, nil
		}
	}
	return 0, fmt.Errorf("--tls-min-version %q: use VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13", s)
}

// ParseTLSCipherSuites parses a comma-separated list of IANA cipher suite names (Go's names). The TLS
// 1.3 suites are accepted and dropped: Go always enables all three.
func ParseTLSCipherSuites(s string) ([]uint16, error) {
	known := map[string]*tls.CipherSuite{}
	var accepted []string
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[cs.Name] = cs
		accepted = append(accepted, cs.Name)
	}
	var out []uint16
	var unknown []string
	for _, name := range splitList(s) {
		cs, ok := known[strings.ToUpper(name)]
		switch {
		case !ok:
			unknown = append(unknown, name)
		case slices.Equal(cs.SupportedVersions, []uint16{tls.VersionTLS13}):
			// always on
		case !slices.Contains(out, cs.ID):
			out = append(out, cs.ID)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("--tls-cipher-suites: unknown or not implemented by Go: %s; accepted names: %s",
			strings.Join(unknown, ", "), strings.Join(accepted, ", "))
	}
	return out, nil
}

type curveName struct {
	id      tls.CurveID
	aliases []string
}

func (c curveName) matches(s string) bool {
	return strings.EqualFold(s, c.id.String()) || slices.ContainsFunc(c.aliases, func(a string) bool { return strings.EqualFold(s, a) })
}

// curveNames are the accepted --tls-curves names: Go's, and the IANA/OpenSSL group names.
var curveNames = []curveName{
	{tls.X25519MLKEM768, nil},
	{tls.SecP256r1MLKEM768, nil},
	{tls.SecP384r1MLKEM1024, nil},
	{tls.X25519, nil},
	{tls.CurveP256, []string{"P256", "P-256", "secp256r1", "prime256v1"}},
	{tls.CurveP384, []string{"P384", "P-384", "secp384r1"}},
	{tls.CurveP521, []string{"P521", "P-521", "secp521r1"}},
}

// ParseTLSCurves parses a comma-separated list of key exchange names, e.g. X25519MLKEM768,X25519,CurveP256.
func ParseTLSCurves(s string) ([]tls.CurveID, error) {
	var out []tls.CurveID
	var unknown, accepted []string
	for _, c := range curveNames {
		accepted = append(accepted, c.id.String())
	}
	for _, name := range splitList(s) {
		i := slices.IndexFunc(curveNames, func(c curveName) bool { return c.matches(name) })
		switch {
		case i < 0:
			unknown = append(unknown, name)
		case !slices.Contains(out, curveNames[i].id):
			out = append(out, curveNames[i].id)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("--tls-curves: unknown key exchange %s; accepted names: %s (or P256, P384, P521)",
			strings.Join(unknown, ", "), strings.Join(accepted, ", "))
	}
	if len(out) == 0 {
		return nil, errors.New("--tls-curves is empty: list at least one key exchange, e.g. X25519MLKEM768,X25519")
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
