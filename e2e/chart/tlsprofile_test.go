package chart

import (
	"crypto/tls"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/boot"
)

// tlsArgs are the TLS profile arguments (--tls-profile, --tls-min-version, --tls-cipher-suites,
// --tls-curves) of a rendered Deployment's container.
func tlsArgs(t *testing.T, objs map[string]map[string]any, name string) []string {
	t.Helper()
	d := mustGet(t, objs, "Deployment/olmv1-system/"+name)
	var out []string
	for _, a := range list(list(d, "spec", "template", "spec", "containers")[0], "args") {
		s, _ := a.(string)
		if name, _, _ := strings.Cut(s, "="); slices.Contains([]string{"--tls-profile", "--tls-min-version", "--tls-cipher-suites", "--tls-curves"}, name) {
			out = append(out, s)
		}
	}
	return out
}

// profileOf parses args with the components' own flags (boot), as the binaries do.
func profileOf(t *testing.T, args []string) (boot.TLSProfile, error) {
	t.Helper()
	var f boot.TLSFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.TLSProfile()
}

// tls.profile and tls.custom become the same --tls-* flags on all three components, and those
// flags are accepted by the binaries' flag parsing.
func TestTLSProfileValues(t *testing.T) {
	dir, ch := loadChart(t)
	custom := map[string]any{"tls": map[string]any{"mode": "selfSigned", "profile": "Custom", "custom": map[string]any{
		"minVersion":   "VersionTLS12",
		"cipherSuites": []any{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		"curves":       []any{"X25519MLKEM768", "X25519"},
	}}}
	for _, tc := range []struct {
		name     string
		vals     map[string]any
		wantArgs []string
		want     boot.TLSProfile
	}{
		{name: "default", vals: nil, wantArgs: []string{"--tls-profile=Intermediate"},
			want: boot.TLSProfile{Type: boot.TLSProfileIntermediate, MinVersion: tls.VersionTLS12}},
		{name: "Modern", vals: map[string]any{"tls": map[string]any{"mode": "selfSigned", "profile": "Modern"}}, wantArgs: []string{"--tls-profile=Modern"},
			want: boot.TLSProfile{Type: boot.TLSProfileModern, MinVersion: tls.VersionTLS13}},
		{name: "Custom", vals: custom, wantArgs: []string{"--tls-profile=Custom", "--tls-min-version=VersionTLS12",
			"--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "--tls-curves=X25519MLKEM768,X25519"},
			want: boot.TLSProfile{Type: boot.TLSProfileCustom, MinVersion: tls.VersionTLS12,
				CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
				Curves:       []tls.CurveID{tls.X25519MLKEM768, tls.X25519}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if findings := Lint(dir, tc.vals); len(findings) > 0 {
				t.Errorf("helm lint (strict) findings:\n%s", strings.Join(findings, "\n"))
			}
			objs := render(t, ch, tc.vals)
			for _, name := range []string{"catalogd", "rukpak", "operator-controller"} {
				args := tlsArgs(t, objs, name)
				if !slices.Equal(args, tc.wantArgs) {
					t.Errorf("%s: --tls-* args %q, want %q", name, args, tc.wantArgs)
					continue
				}
				got, err := profileOf(t, args)
				if err != nil {
					t.Fatalf("%s: the binaries refuse the rendered flags: %v", name, err)
				}
				if got.Type != tc.want.Type || got.MinVersion != tc.want.MinVersion ||
					tc.want.CipherSuites != nil && !slices.Equal(got.CipherSuites, tc.want.CipherSuites) ||
					tc.want.Curves != nil && !slices.Equal(got.Curves, tc.want.Curves) {
					t.Errorf("%s: profile %v, want %v", name, got, tc.want)
				}
			}
		})
	}
}

func TestTLSProfileValuesRejected(t *testing.T) {
	_, ch := loadChart(t)
	for name, tc := range map[string]struct {
		vals    map[string]any
		wantErr string
	}{
		"unknown profile":    {map[string]any{"tls": map[string]any{"mode": "selfSigned", "profile": "Strict"}}, "schema"},
		"bad min version":    {map[string]any{"tls": map[string]any{"mode": "selfSigned", "profile": "Custom", "custom": map[string]any{"minVersion": "1.2"}}}, "schema"},
		"OpenSSL suite name": {map[string]any{"tls": map[string]any{"mode": "selfSigned", "profile": "Custom", "custom": map[string]any{"cipherSuites": []any{"ECDHE-RSA-AES128-GCM-SHA256"}}}}, "schema"},
		"custom without Custom": {map[string]any{"tls": map[string]any{"mode": "selfSigned", "profile": "Modern", "custom": map[string]any{"curves": []any{"X25519"}}}},
			`tls.custom is set but tls.profile is "Modern": set tls.profile=Custom, or drop tls.custom`},
	} {
		_, err := Render(ch, tc.vals, RenderOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: want an error with %q, got %v", name, tc.wantErr, err)
		}
	}
}
