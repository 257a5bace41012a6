package chart

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
)

// rukpakArgs returns the args of rukpak's container.
func rukpakArgs(t *testing.T, objs map[string]map[string]any, ns string) []string {
	t.Helper()
	var out []string
	for _, a := range list(list(mustGet(t, objs, "Deployment/"+ns+"/rukpak"), "spec", "template", "spec", "containers")[0], "args") {
		out = append(out, a.(string))
	}
	return out
}

// namedRules returns the rules of a Role/ClusterRole that name resource in apiGroup with resourceNames.
func namedRules(role map[string]any, apiGroup, resource string) []map[string]any {
	var out []map[string]any
	for _, r := range list(role, "rules") {
		if slices.Contains(list(r, "apiGroups"), any(apiGroup)) && slices.Contains(list(r, "resources"), any(resource)) && len(list(r, "resourceNames")) > 0 {
			out = append(out, r.(map[string]any))
		}
	}
	return out
}

func strs(l []any) []string {
	var out []string
	for _, v := range l {
		out = append(out, v.(string))
	}
	return out
}

// TestPlatformCertRotatorInSelfSignedMode: in selfSigned mode rukpak gets the --platform-* flags that
// name exactly the chart's CA Secret, serving Secrets (with the DNS names their certificates carry) and
// APIService, and RBAC for exactly those objects; in the other modes neither.
func TestPlatformCertRotatorInSelfSignedMode(t *testing.T) {
	_, ch := loadChart(t)
	const ns = "olmv1-system"
	const apiService = "v1alpha1.metadata.catalogd.operatorframework.io"
	for _, tc := range []struct {
		name          string
		vals          map[string]any
		components    []string
		apiService    bool
		validityHours string
	}{
		{"defaults", nil, []string{"catalogd", "operator-controller", "rukpak"}, true, "8760h"},
		{"selfSigned, 90 days", map[string]any{"tls": map[string]any{"mode": "selfSigned", "selfSigned": map[string]any{"validityDays": 90}}},
			[]string{"catalogd", "operator-controller", "rukpak"}, true, "2160h"},
		{"no metadata API", map[string]any{"catalogd": map[string]any{"metadataAPI": map[string]any{"enabled": false}}},
			[]string{"catalogd", "operator-controller", "rukpak"}, false, "8760h"},
		{"no operator-controller", map[string]any{"operatorController": map[string]any{"enabled": false}},
			[]string{"catalogd", "rukpak"}, true, "8760h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, ch, tc.vals)
			args := rukpakArgs(t, objs, ns)
			var platform []string
			for _, a := range args {
				if strings.HasPrefix(a, "--platform-") {
					platform = append(platform, a)
				}
			}
			want := []string{"--platform-ca-secret=" + ns + "/olmv1-ca"}
			secrets := []string{"olmv1-ca"}
			for _, c := range tc.components {
				dns := []string{c, c + "." + ns, c + "." + ns + ".svc", c + "." + ns + ".svc.cluster.local"}
				want = append(want, "--platform-serving-secret="+ns+"/"+c+"-tls:"+strings.Join(dns, ","))
				secrets = append(secrets, c+"-tls")
				// The DNS names rukpak keeps are those the chart's certificate has.
				crt := parseCert(t, mustBase64(t, str(mustGet(t, objs, "Secret/"+ns+"/"+c+"-tls"), "data", "tls.crt")))
				if !slices.Equal(crt.DNSNames, dns) {
					t.Errorf("%s: chart certificate DNS names %v, rotator's %v", c, crt.DNSNames, dns)
				}
			}
			if tc.apiService {
				want = append(want, "--platform-apiservice="+apiService)
				mustGet(t, objs, "APIService//"+apiService)
			}
			want = append(want, "--platform-cert-validity="+tc.validityHours)
			if !slices.Equal(platform, want) {
				t.Errorf("rukpak's --platform-* args:\n got %q\nwant %q", platform, want)
			}
			// Every Secret named is rendered, and its format is the one the rotator writes.
			for _, s := range secrets {
				sec := mustGet(t, objs, "Secret/"+ns+"/"+s)
				for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
					if str(sec, "data", k) == "" {
						t.Errorf("Secret %s lacks %s", s, k)
					}
				}
			}

			role := mustGet(t, objs, "Role/"+ns+"/rukpak")
			rules := namedRules(role, "", "secrets")
			if len(rules) != 1 || !slices.Equal(strs(list(rules[0], "verbs")), []string{"get", "list", "watch", "update"}) {
				t.Fatalf("rukpak Role: want one rule for the platform Secrets with get, list, watch, update; got %v", rules)
			}
			got := strs(list(rules[0], "resourceNames"))
			slices.Sort(got)
			slices.Sort(secrets)
			if !slices.Equal(got, secrets) {
				t.Errorf("Secret resourceNames %v, want %v", got, secrets)
			}
			cr := mustGet(t, objs, "ClusterRole//olmv1-rukpak")
			asRules := namedRules(cr, "apiregistration.k8s.io", "apiservices")
			switch {
			case !tc.apiService && len(asRules) != 0:
				t.Errorf("no APIService rendered, but rukpak may change one: %v", asRules)
			case tc.apiService && (len(asRules) != 1 || !slices.Equal(strs(list(asRules[0], "resourceNames")), []string{apiService}) ||
				!slices.Equal(strs(list(asRules[0], "verbs")), []string{"get", "patch"})):
				t.Errorf("rukpak ClusterRole: want get, patch on APIService %s only; got %v", apiService, asRules)
			}
			// The chart's bundle is what rukpak compares against: the same in every place.
			if as, ok := objs["APIService//"+apiService]; ok {
				for _, s := range secrets {
					if got := str(mustGet(t, objs, "Secret/"+ns+"/"+s), "data", "ca.crt"); got != str(as, "spec", "caBundle") {
						t.Errorf("Secret %s ca.crt differs from the APIService caBundle", s)
					}
				}
			}
		})
	}
	for _, mode := range []string{"certManager", "openshiftServiceCA"} {
		objs := render(t, ch, tlsValues(mode))
		for _, a := range rukpakArgs(t, objs, ns) {
			if strings.HasPrefix(a, "--platform-") {
				t.Errorf("%s: rukpak gets %s", mode, a)
			}
		}
		if r := namedRules(mustGet(t, objs, "Role/"+ns+"/rukpak"), "", "secrets"); len(r) != 0 {
			t.Errorf("%s: rukpak Role names platform Secrets: %v", mode, r)
		}
		if r := namedRules(mustGet(t, objs, "ClusterRole//olmv1-rukpak"), "apiregistration.k8s.io", "apiservices"); len(r) != 0 {
			t.Errorf("%s: rukpak may change APIServices: %v", mode, r)
		}
	}
}

func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
