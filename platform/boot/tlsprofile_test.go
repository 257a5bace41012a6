package boot

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/olmv1/olmv1/platform/boot/boottest"
	"github.com/olmv1/olmv1/platform/pki"
)

// rsaServingCert is a self-signed RSA certificate for 127.0.0.1: the RSA key exchange suites of the
// Old profile need an RSA key, so that refusing them is the profile's doing and not the key's.
func rsaServingCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := pki.NewRSAKey(2048)
	must(t, err)
	pair, err := pki.Issue(pki.Request{
		Subject:     pkix.Name{CommonName: "rsa"},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		Key:         key,
	}, nil)
	must(t, err)
	return pair.TLSCertificate()
}

func ecServingCert(t *testing.T) tls.Certificate {
	t.Helper()
	crt, key, err := boottest.SelfSignedServing("ec")
	must(t, err)
	pair, err := tls.X509KeyPair(crt, key)
	must(t, err)
	return pair
}

// serveTLS listens on a free loopback port with cfg and completes the handshake of every
// connection (then closes it); it returns the address.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	must(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("ok"))
				}
			}()
		}
	}()
	return l.Addr().String()
}

// dial handshakes with addr and reads the server's "ok", returning the connection state.
func dial(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	cfg.InsecureSkipVerify = true //nolint:gosec // the tests look at versions, suites and curves, not trust
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil {
		return tls.ConnectionState{}, err
	}
	return c.ConnectionState(), nil
}

func profile(t *testing.T, name TLSProfileType) TLSProfile {
	t.Helper()
	p, err := NamedTLSProfile(name)
	must(t, err)
	return p
}

func serverWith(t *testing.T, p TLSProfile, cert tls.Certificate) string {
	t.Helper()
	cfg := p.ServerConfig()
	cfg.Certificates = []tls.Certificate{cert}
	return serveTLS(t, cfg)
}

// TestTLSProfileHandshakes: real handshakes between a server with each profile and clients with
// what some client could offer.
func TestTLSProfileHandshakes(t *testing.T) {
	rsaCert, ecCert := rsaServingCert(t), ecServingCert(t)
	custom, err := TLSFlags{Profile: "Custom", MinVersion: "VersionTLS12", Curves: "X25519,CurveP256"}.TLSProfile()
	must(t, err)
	tests := []struct {
		name    string
		server  TLSProfile
		cert    tls.Certificate
		client  *tls.Config
		wantErr string // substring of the client's handshake error; "" means success
		check   func(t *testing.T, cs tls.ConnectionState)
	}{
		{
			name: "Modern refuses a TLS 1.2 client", server: profile(t, TLSProfileModern), cert: ecCert,
			client: &tls.Config{MaxVersion: tls.VersionTLS12}, wantErr: "protocol version not supported",
		},
		{
			name: "Modern accepts a TLS 1.3 client with the post-quantum hybrid", server: profile(t, TLSProfileModern), cert: ecCert,
			client: &tls.Config{MinVersion: tls.VersionTLS13},
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.Version != tls.VersionTLS13 || cs.CurveID != tls.X25519MLKEM768 {
					t.Errorf("negotiated %s with %s, want TLS 1.3 with X25519MLKEM768", tls.VersionName(cs.Version), cs.CurveID)
				}
			},
		},
		{
			name: "Modern with a client offering only X25519 uses X25519", server: profile(t, TLSProfileModern), cert: ecCert,
			client: &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}},
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.CurveID != tls.X25519 {
					t.Errorf("negotiated %s, want X25519", cs.CurveID)
				}
			},
		},
		{
			name: "Intermediate refuses a client offering only TLS_RSA_WITH_AES_128_CBC_SHA", server: profile(t, TLSProfileIntermediate), cert: rsaCert,
			client:  &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
			wantErr: "handshake failure",
		},
		{
			name: "Old accepts a client offering only TLS_RSA_WITH_AES_128_CBC_SHA", server: profile(t, TLSProfileOld), cert: rsaCert,
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.CipherSuite != tls.TLS_RSA_WITH_AES_128_CBC_SHA {
					t.Errorf("negotiated %s", tls.CipherSuiteName(cs.CipherSuite))
				}
			},
		},
		{
			name: "Old accepts a TLS 1.0 client", server: profile(t, TLSProfileOld), cert: rsaCert,
			client: &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10},
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.Version != tls.VersionTLS10 {
					t.Errorf("negotiated %s", tls.VersionName(cs.Version))
				}
			},
		},
		{
			name: "Intermediate refuses a TLS 1.1 client", server: profile(t, TLSProfileIntermediate), cert: rsaCert,
			client:  &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
			wantErr: "protocol version not supported",
		},
		{
			name: "Intermediate accepts a TLS 1.2 ECDHE AEAD client", server: profile(t, TLSProfileIntermediate), cert: ecCert,
			client: &tls.Config{MaxVersion: tls.VersionTLS12},
			check: func(t *testing.T, cs tls.ConnectionState) {
				// The ML-KEM hybrids are TLS 1.3 key exchanges: TLS 1.2 falls back to X25519.
				if cs.Version != tls.VersionTLS12 || cs.CurveID != tls.X25519 || !slices.Contains(intermediateSuites, cs.CipherSuite) {
					t.Errorf("negotiated %s, %s, %s", tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite), cs.CurveID)
				}
			},
		},
		{
			name: "Intermediate with a TLS 1.3 client uses the post-quantum hybrid", server: profile(t, TLSProfileIntermediate), cert: ecCert,
			client: &tls.Config{},
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.Version != tls.VersionTLS13 || cs.CurveID != tls.X25519MLKEM768 {
					t.Errorf("negotiated %s with %s", tls.VersionName(cs.Version), cs.CurveID)
				}
			},
		},
		{
			name: "Custom curves without the hybrid: a default client gets X25519", server: custom, cert: ecCert,
			client: &tls.Config{},
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.CurveID != tls.X25519 {
					t.Errorf("negotiated %s, want X25519", cs.CurveID)
				}
			},
		},
		{
			name: "Custom curves without a curve the client offers: refused", server: custom, cert: ecCert,
			client:  &tls.Config{CurvePreferences: []tls.CurveID{tls.CurveP384}},
			wantErr: "handshake failure",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := dial(serverWith(t, tt.server, tt.cert), tt.client)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want a handshake error with %q, got %v (negotiated %s %s)", tt.wantErr, err, tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite))
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			tt.check(t, cs)
		})
	}
}

// The client side: an outgoing client with the Modern profile does not talk to a TLS 1.2 server,
// and with Intermediate it refuses a server that only has a suite outside the profile.
func TestTLSProfileClientConfig(t *testing.T) {
	tls12 := &tls.Config{MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ecServingCert(t)}}
	addr := serveTLS(t, tls12)
	if _, err := dial(addr, profile(t, TLSProfileModern).ClientConfig()); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("a Modern client with a TLS 1.2 server: want a protocol version error, got %v", err)
	}
	cs, err := dial(addr, profile(t, TLSProfileIntermediate).ClientConfig())
	if err != nil || cs.Version != tls.VersionTLS12 {
		t.Errorf("an Intermediate client with a TLS 1.2 server: %v (%s)", err, tls.VersionName(cs.Version))
	}
	cbcOnly := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}, Certificates: []tls.Certificate{rsaServingCert(t)}}
	if _, err := dial(serveTLS(t, cbcOnly), profile(t, TLSProfileIntermediate).ClientConfig()); err == nil {
		t.Error("an Intermediate client accepted a server with only TLS_RSA_WITH_AES_128_CBC_SHA")
	}
}

func TestTLSProfileApplyKeepsTheRest(t *testing.T) {
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("unused") }
	c := &tls.Config{NextProtos: []string{"http/1.1"}, GetCertificate: getCert, ClientAuth: tls.RequestClientCert}
	profile(t, TLSProfileModern).Apply(c)
	if c.MinVersion != tls.VersionTLS13 || c.CipherSuites != nil || c.CurvePreferences[0] != tls.X25519MLKEM768 {
		t.Errorf("Modern applied: %+v", c)
	}
	if c.GetCertificate == nil || c.ClientAuth != tls.RequestClientCert || len(c.NextProtos) != 1 {
		t.Errorf("Apply must leave certificates, client auth and protocols alone: %+v", c)
	}
	var zero TLSProfile
	zero.Apply(c)
	if c.MinVersion != tls.VersionTLS12 || !slices.Equal(c.CipherSuites, intermediateSuites) {
		t.Errorf("the zero profile must be Intermediate: min %s, suites %v", tls.VersionName(c.MinVersion), c.CipherSuites)
	}
}

func TestTLSFlags(t *testing.T) {
	tests := []struct {
		name    string
		flags   TLSFlags
		want    TLSProfile
		wantErr []string
	}{
		{name: "default", flags: TLSFlags{Profile: "Intermediate"},
			want: TLSProfile{Type: TLSProfileIntermediate, MinVersion: tls.VersionTLS12, CipherSuites: intermediateSuites, Curves: defaultCurves}},
		{name: "Modern", flags: TLSFlags{Profile: "Modern"},
			want: TLSProfile{Type: TLSProfileModern, MinVersion: tls.VersionTLS13, Curves: defaultCurves}},
		{name: "Old", flags: TLSFlags{Profile: "Old"},
			want: TLSProfile{Type: TLSProfileOld, MinVersion: tls.VersionTLS10, CipherSuites: oldSuites, Curves: defaultCurves}},
		{name: "one custom flag with a named profile", flags: TLSFlags{Profile: "Intermediate", CipherSuites: "TLS_RSA_WITH_AES_128_CBC_SHA"},
			wantErr: []string{`--tls-cipher-suites needs --tls-profile=Custom (the profile is "Intermediate"): drop it, or set --tls-profile=Custom`}},
		{name: "unknown profile", flags: TLSFlags{Profile: "Strict"}, wantErr: []string{`--tls-profile "Strict"`, "Old, Intermediate, Modern or Custom"}},
		{name: "custom flags with a named profile", flags: TLSFlags{Profile: "Modern", MinVersion: "VersionTLS12", Curves: "X25519"},
			wantErr: []string{"--tls-min-version, --tls-curves need --tls-profile=Custom", `"Modern"`}},
		{name: "Custom defaults to Intermediate's settings", flags: TLSFlags{Profile: "Custom"},
			want: TLSProfile{Type: TLSProfileCustom, MinVersion: tls.VersionTLS12, CipherSuites: intermediateSuites, Curves: defaultCurves}},
		{name: "Custom", flags: TLSFlags{Profile: "Custom", MinVersion: "TLSv1.1",
			CipherSuites: "TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", Curves: "x25519,secp384r1"},
			want: TLSProfile{Type: TLSProfileCustom, MinVersion: tls.VersionTLS11,
				CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA},
				Curves:       []tls.CurveID{tls.X25519, tls.CurveP384}}},
		{name: "Custom TLS 1.3", flags: TLSFlags{Profile: "Custom", MinVersion: "VersionTLS13", Curves: "SecP256r1MLKEM768,X25519MLKEM768"},
			want: TLSProfile{Type: TLSProfileCustom, MinVersion: tls.VersionTLS13, Curves: []tls.CurveID{tls.SecP256r1MLKEM768, tls.X25519MLKEM768}}},
		{name: "unknown cipher suite", flags: TLSFlags{Profile: "Custom", CipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,DHE-RSA-AES128-GCM-SHA256"},
			wantErr: []string{"--tls-cipher-suites: unknown or not implemented by Go: DHE-RSA-AES128-GCM-SHA256", "accepted names: ", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}},
		{name: "unknown curve", flags: TLSFlags{Profile: "Custom", Curves: "X448"},
			wantErr: []string{"--tls-curves: unknown key exchange X448", "accepted names: X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024, X25519, CurveP256"}},
		{name: "bad version", flags: TLSFlags{Profile: "Custom", MinVersion: "SSLv3"},
			wantErr: []string{`--tls-min-version "SSLv3": use VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13`}},
		{name: "only TLS 1.3 suites with TLS 1.2", flags: TLSFlags{Profile: "Custom", CipherSuites: "TLS_AES_128_GCM_SHA256"},
			wantErr: []string{"--tls-cipher-suites lists no TLS 1.0–1.2 suite, which --tls-min-version=VersionTLS12 needs"}},
		{name: "TLS 1.2 suites with TLS 1.3", flags: TLSFlags{Profile: "Custom", MinVersion: "VersionTLS13", CipherSuites: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			wantErr: []string{"--tls-min-version=VersionTLS13 never uses"}},
		{name: "empty curves", flags: TLSFlags{Profile: "Custom", Curves: " , "}, wantErr: []string{"--tls-curves is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.flags.TLSProfile()
			if len(tt.wantErr) > 0 {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("want an error with %q, got %v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tt.want.Type || got.MinVersion != tt.want.MinVersion || !slices.Equal(got.CipherSuites, tt.want.CipherSuites) || !slices.Equal(got.Curves, tt.want.Curves) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Every suite of the named profiles is one Go implements, and Intermediate's are all ECDHE AEAD.
func TestTLSProfileSuitesAreImplemented(t *testing.T) {
	byID := map[uint16]*tls.CipherSuite{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byID[cs.ID] = cs
	}
	for _, id := range oldSuites {
		if byID[id] == nil {
			t.Errorf("suite %#04x of the Old profile is not implemented by Go", id)
		}
	}
	for _, id := range intermediateSuites {
		name := tls.CipherSuiteName(id)
		if cs := byID[id]; cs == nil || cs.Insecure || !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")) {
			t.Errorf("Intermediate suite %s is not an ECDHE AEAD suite Go implements", name)
		}
	}
}

// A bad profile stops the binary before it contacts the API server, with exit code 2 (a usage
// error), and the component never sees a profile.
func TestMainRefusesABadTLSProfile(t *testing.T) {
	var got TLSProfile
	code := Main(Component{Name: "test", TLSProfile: &got}, []string{"--tls-profile=Modern", "--tls-min-version=VersionTLS12"})
	if code != 2 || got.Type != "" {
		t.Errorf("exit code %d (want 2), profile %v (want none)", code, got)
	}
}
