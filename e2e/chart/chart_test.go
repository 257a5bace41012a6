package chart

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
)

var modes = []string{"selfSigned", "certManager", "openshiftServiceCA"}

func loadChart(t *testing.T) (string, *chart.Chart) {
	t.Helper()
	dir := Dir(filepath.Join("..", ".."))
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ch
}

func tlsValues(mode string) map[string]any {
	return map[string]any{"tls": map[string]any{"mode": mode}}
}

// render renders the chart with vals and indexes the objects by kind/namespace/name.
func render(t *testing.T, ch *chart.Chart, vals map[string]any) map[string]map[string]any {
	t.Helper()
	manifest, err := Render(ch, vals, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(manifest)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, o := range objs {
		key := fmt.Sprintf("%s/%s/%s", o["kind"], str(o, "metadata", "namespace"), str(o, "metadata", "name"))
		if _, dup := out[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		out[key] = o
	}
	return out
}

func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string { s, _ := get(o, path...).(string); return s }

func list(o any, path ...string) []any { l, _ := get(o, path...).([]any); return l }

func ofKind(objs map[string]map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func mustGet(t *testing.T, objs map[string]map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := objs[key]
	if !ok {
		var keys []string
		for k := range objs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Fatalf("%s not rendered; rendered: %v", key, keys)
	}
	return o
}

func TestLintInEveryTLSMode(t *testing.T) {
	dir, _ := loadChart(t)
	for _, mode := range modes {
		if findings := Lint(dir, tlsValues(mode)); len(findings) > 0 {
			t.Errorf("tls.mode=%s: helm lint (strict) findings:\n%s", mode, strings.Join(findings, "\n"))
		}
	}
}

func TestDeploymentsAreHardened(t *testing.T) {
	_, ch := loadChart(t)
	for _, mode := range modes {
		objs := render(t, ch, tlsValues(mode))
		deps := ofKind(objs, "Deployment")
		if len(deps) != 3 {
			t.Fatalf("tls.mode=%s: %d Deployments, want 3", mode, len(deps))
		}
		for _, d := range deps {
			name := str(d, "metadata", "name")
			pod := get(d, "spec", "template", "spec")
			if get(pod, "securityContext", "runAsNonRoot") != true || str(pod, "securityContext", "seccompProfile", "type") != "RuntimeDefault" {
				t.Errorf("%s: pod securityContext %v, want runAsNonRoot and seccomp RuntimeDefault", name, get(pod, "securityContext"))
			}
			if str(pod, "serviceAccountName") != name {
				t.Errorf("%s: serviceAccountName %q", name, str(pod, "serviceAccountName"))
			}
			emptyDirs := map[string]bool{}
			secretVolumes := map[string]string{}
			for _, v := range list(pod, "volumes") {
				if get(v, "emptyDir") != nil {
					emptyDirs[str(v, "name")] = true
				}
				if s := str(v, "secret", "secretName"); s != "" {
					secretVolumes[str(v, "name")] = s
				}
			}
			containers := list(pod, "containers")
			if len(containers) != 1 {
				t.Fatalf("%s: %d containers", name, len(containers))
			}
			c := containers[0]
			sc := get(c, "securityContext")
			if get(sc, "allowPrivilegeEscalation") != false || get(sc, "readOnlyRootFilesystem") != true ||
				!slices.Equal(list(sc, "capabilities", "drop"), []any{"ALL"}) {
				t.Errorf("%s: container securityContext %v", name, sc)
			}
			for _, p := range []string{"livenessProbe", "readinessProbe"} {
				if str(c, p, "httpGet", "port") != "probes" {
					t.Errorf("%s: %s %v", name, p, get(c, p))
				}
			}
			if get(c, "resources", "requests", "cpu") == nil || get(c, "resources", "limits", "memory") == nil {
				t.Errorf("%s: resources %v", name, get(c, "resources"))
			}
			// The root filesystem is read-only: every writable mount must be an emptyDir.
			for _, m := range list(c, "volumeMounts") {
				if get(m, "readOnly") != true && !emptyDirs[str(m, "name")] {
					t.Errorf("%s: writable mount %v is not an emptyDir", name, m)
				}
			}
			// Every TLS server (metrics; catalogd's content endpoint and CatalogMetadata API) serves the
			// component's one certificate, mounted once, through --tls-cert-dir and no deprecated flag.
			args := list(c, "args")
			if !slices.Contains(args, any("--tls-cert-dir=/etc/olmv1/tls")) || secretVolumes["tls"] != name+"-tls" || len(secretVolumes) != 1 {
				t.Errorf("%s: serving certificate not wired once: args %v, volumes %v", name, args, secretVolumes)
			}
			for _, a := range args {
				for _, deprecated := range []string{"--metrics-cert-dir", "--tls-cert-file", "--tls-key-file", "--metadata-cert-dir"} {
					if strings.HasPrefix(a.(string), deprecated+"=") {
						t.Errorf("%s: deprecated flag %s", name, a)
					}
				}
			}
			if name == "catalogd" && !slices.Contains(args, any("--metadata-apiservice=none")) {
				t.Errorf("catalogd: args %v lack --metadata-apiservice=none", args)
			}
		}
		ns := mustGet(t, objs, "Namespace//olmv1-system")
		if str(ns, "metadata", "labels", "pod-security.kubernetes.io/enforce") != "restricted" {
			t.Errorf("namespace labels %v", get(ns, "metadata", "labels"))
		}
	}
}

func TestServingCertificatesInEveryTLSMode(t *testing.T) {
	_, ch := loadChart(t)
	for _, mode := range modes {
		objs := render(t, ch, tlsValues(mode))
		as := mustGet(t, objs, "APIService//v1alpha1.metadata.catalogd.operatorframework.io")
		if str(as, "spec", "service", "name") != "catalogd" || str(as, "spec", "service", "namespace") != "olmv1-system" ||
			get(as, "spec", "group") != "metadata.catalogd.operatorframework.io" || get(as, "spec", "version") != "v1alpha1" {
			t.Errorf("%s: APIService spec %v", mode, get(as, "spec"))
		}
		for _, name := range []string{"catalogd", "rukpak", "operator-controller"} {
			svc := mustGet(t, objs, "Service/olmv1-system/"+name)
			secret := name + "-tls"
			switch mode {
			case "selfSigned":
				s := mustGet(t, objs, "Secret/olmv1-system/"+secret)
				verifyServingCert(t, s, str(as, "spec", "caBundle"), name+".olmv1-system.svc")
			case "certManager":
				c := mustGet(t, objs, "Certificate/olmv1-system/"+name)
				if str(c, "spec", "secretName") != secret || !slices.Contains(list(c, "spec", "dnsNames"), any(name+".olmv1-system.svc")) {
					t.Errorf("certManager: Certificate %s spec %v", name, get(c, "spec"))
				}
			case "openshiftServiceCA":
				if str(svc, "metadata", "annotations", "service.beta.openshift.io/serving-cert-secret-name") != secret {
					t.Errorf("openshiftServiceCA: Service %s annotations %v", name, get(svc, "metadata", "annotations"))
				}
			}
		}
		switch mode {
		case "certManager":
			if str(as, "metadata", "annotations", "cert-manager.io/inject-ca-from") != "olmv1-system/catalogd" || get(as, "spec", "caBundle") != nil {
				t.Errorf("certManager: APIService %v", as)
			}
			mustGet(t, objs, "Issuer/olmv1-system/olmv1-ca")
		case "openshiftServiceCA":
			if str(as, "metadata", "annotations", "service.beta.openshift.io/inject-cabundle") != "true" {
				t.Errorf("openshiftServiceCA: APIService annotations %v", get(as, "metadata", "annotations"))
			}
		}
		rukpak := mustGet(t, objs, "Deployment/olmv1-system/rukpak")
		provider := map[string]string{"selfSigned": "self-signed", "certManager": "cert-manager", "openshiftServiceCA": "openshift-service-ca"}[mode]
		if !slices.Contains(list(rukpak, "spec", "template", "spec", "containers")[0].(map[string]any)["args"].([]any), any("--webhook-cert-provider="+provider)) {
			t.Errorf("%s: rukpak does not get --webhook-cert-provider=%s", mode, provider)
		}
	}
}

// verifyServingCert checks that secret's tls.crt is a serving certificate for dnsName issued by the CA
// in caBundleB64 (the APIService's caBundle), and that its ca.crt is that CA.
func verifyServingCert(t *testing.T, secret map[string]any, caBundleB64, dnsName string) {
	t.Helper()
	caPEM, err := base64.StdEncoding.DecodeString(caBundleB64)
	if err != nil {
		t.Fatalf("caBundle: %v", err)
	}
	ca := parseCert(t, caPEM)
	if !ca.IsCA {
		t.Fatalf("caBundle certificate %q is not a CA", ca.Subject)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	crt, err := base64.StdEncoding.DecodeString(str(secret, "data", "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseCert(t, crt).Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName}); err != nil {
		t.Errorf("%s: serving certificate does not verify for %s against the caBundle: %v", str(secret, "metadata", "name"), dnsName, err)
	}
	if str(secret, "data", "ca.crt") != caBundleB64 {
		t.Errorf("%s: ca.crt differs from the APIService caBundle", str(secret, "metadata", "name"))
	}
}

func parseCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		t.Fatalf("no PEM block in %q", pemBytes)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRBACIsLeastPrivilege(t *testing.T) {
	_, ch := loadChart(t)
	wildcard := func(cr map[string]any) bool {
		for _, r := range list(cr, "rules") {
			if slices.Contains(list(r, "resources"), any("*")) || slices.Contains(list(r, "verbs"), any("*")) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		clusterAdmin bool
	}{{true}, {false}} {
		objs := render(t, ch, map[string]any{"rukpak": map[string]any{"clusterAdmin": tc.clusterAdmin}})
		for _, name := range []string{"catalogd", "operator-controller"} {
			cr := mustGet(t, objs, "ClusterRole//olmv1-"+name)
			if wildcard(cr) {
				t.Errorf("%s ClusterRole has wildcards: %v", name, list(cr, "rules"))
			}
			readsOwnCRDs := false
			for _, r := range list(cr, "rules") {
				if slices.Contains(list(r, "resources"), any("secrets")) {
					t.Errorf("%s may read Secrets cluster-wide: %v", name, r)
				}
				if slices.Contains(list(r, "resources"), any("customresourcedefinitions")) {
					// boot.WaitForCRDs gets its own CRDs at start-up, and nothing else.
					readsOwnCRDs = slices.Contains(list(r, "resourceNames"), any("catalogs.catalogd.operatorframework.io")) &&
						slices.Equal(list(r, "verbs"), []any{"get"})
				}
			}
			if !readsOwnCRDs {
				t.Errorf("%s cannot get its CRDs by name (boot.WaitForCRDs): %v", name, list(cr, "rules"))
			}
		}
		if got := wildcard(mustGet(t, objs, "ClusterRole//olmv1-rukpak")); got != tc.clusterAdmin {
			t.Errorf("rukpak.clusterAdmin=%v: wildcard rule present = %v", tc.clusterAdmin, got)
		}
	}
	// Every binding's ServiceAccount is rendered, and each component is bound to its own roles, to
	// system:auth-delegator (metrics authn/authz) and to a leader-election Role.
	objs := render(t, ch, nil)
	bound := map[string][]string{}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, b := range ofKind(objs, kind) {
			for _, s := range list(b, "subjects") {
				sa := fmt.Sprintf("ServiceAccount/%s/%s", str(s, "namespace"), str(s, "name"))
				mustGet(t, objs, sa)
				bound[str(s, "name")] = append(bound[str(s, "name")], str(b, "roleRef", "name"))
				if ref := str(b, "roleRef", "name"); !strings.HasPrefix(ref, "system:") && ref != "extension-apiserver-authentication-reader" {
					mustGet(t, objs, fmt.Sprintf("%s/%s/%s", str(b, "roleRef", "kind"), str(b, "metadata", "namespace"), ref))
				}
			}
		}
	}
	for _, name := range []string{"catalogd", "rukpak", "operator-controller"} {
		for _, want := range []string{"system:auth-delegator", name + "-leader-election", "olmv1-" + name} {
			if !slices.Contains(bound[name], want) {
				t.Errorf("%s is bound to %v, missing %s", name, bound[name], want)
			}
		}
	}
	if !slices.Contains(bound["catalogd"], "extension-apiserver-authentication-reader") {
		t.Errorf("catalogd (aggregated API) cannot read the requestheader CA: %v", bound["catalogd"])
	}
}

func TestToggles(t *testing.T) {
	_, ch := loadChart(t)
	objs := render(t, ch, nil)
	if n := len(ofKind(objs, "NetworkPolicy")); n != 3 {
		t.Errorf("%d NetworkPolicies, want 3", n)
	}
	if n := len(ofKind(objs, "PodDisruptionBudget")) + len(ofKind(objs, "ServiceMonitor")); n != 0 {
		t.Errorf("one replica, no monitoring: want no PDB or ServiceMonitor, got %d", n)
	}
	objs = render(t, ch, map[string]any{
		"catalogd":       map[string]any{"replicas": 2, "metadataAPI": map[string]any{"enabled": false}},
		"serviceMonitor": map[string]any{"enabled": true},
		"networkPolicy":  map[string]any{"enabled": false},
		"namespace":      map[string]any{"name": "olm", "create": false},
		"image":          map[string]any{"registry": "127.0.0.1:5000/olmv1"},
		"rukpak":         map[string]any{"image": map[string]any{"repository": "rukpak", "digest": "sha256:" + strings.Repeat("a", 64)}},
	})
	mustGet(t, objs, "PodDisruptionBudget/olm/catalogd")
	if n := len(ofKind(objs, "ServiceMonitor")); n != 3 {
		t.Errorf("%d ServiceMonitors, want 3", n)
	}
	if n := len(ofKind(objs, "NetworkPolicy")) + len(ofKind(objs, "APIService")) + len(ofKind(objs, "Namespace")); n != 0 {
		t.Errorf("networkPolicy, metadataAPI and namespace.create disabled: %d of those objects rendered", n)
	}
	img := func(name string) string {
		return str(list(mustGet(t, objs, "Deployment/olm/"+name), "spec", "template", "spec", "containers")[0], "image")
	}
	if got := img("rukpak"); got != "127.0.0.1:5000/olmv1/rukpak@sha256:"+strings.Repeat("a", 64) {
		t.Errorf("rukpak image %s", got)
	}
	if got := img("catalogd"); got != "127.0.0.1:5000/olmv1/catalogd:0.1.0" {
		t.Errorf("catalogd image %s (want the appVersion tag)", got)
	}
}

// TestReplicasSpreadOverNodes: a component with more than one replica gets a PodDisruptionBudget and a
// soft spread of its pods over nodes (selecting only its own pods); with one replica neither; a
// user's topologySpreadConstraints replace the default.
func TestOperatorControllerEgressFollowsDirectBundleMetadata(t *testing.T) {
	_, ch := loadChart(t)
	args := func(objs map[string]map[string]any) []any {
		return list(list(mustGet(t, objs, "Deployment/olmv1-system/operator-controller"), "spec", "template", "spec", "containers")[0], "args")
	}
	egress := func(objs map[string]map[string]any) []any {
		return list(mustGet(t, objs, "NetworkPolicy/olmv1-system/operator-controller"), "spec", "egress")
	}

	// By default operator-controller reads direct bundles' content: it pulls like rukpak.
	objs := render(t, ch, nil)
	if !slices.Contains(args(objs), "--direct-bundle-namespace=olmv1-system") || slices.Contains(args(objs), "--no-direct-bundle-metadata") {
		t.Errorf("default args %v: want --direct-bundle-namespace=olmv1-system", args(objs))
	}
	if e := egress(objs); len(e) != 1 || len(e[0].(map[string]any)) != 0 {
		t.Errorf("default egress %v: want one open rule (registries, git and HTTP servers anywhere)", e)
	}

	// Without it, DNS and the API server only.
	objs = render(t, ch, map[string]any{"operatorController": map[string]any{"directBundleMetadata": false}})
	if !slices.Contains(args(objs), "--no-direct-bundle-metadata") {
		t.Errorf("args %v: want --no-direct-bundle-metadata", args(objs))
	}
	var ports []string
	for _, rule := range egress(objs) {
		for _, p := range list(rule, "ports") {
			ports = append(ports, fmt.Sprint(get(p, "port"))+"/"+str(p, "protocol"))
		}
	}
	if want := []string{"53/UDP", "53/TCP", "443/TCP", "6443/TCP"}; !slices.Equal(ports, want) {
		t.Errorf("egress ports %v, want %v", ports, want)
	}
}

func TestReplicasSpreadOverNodes(t *testing.T) {
	_, ch := loadChart(t)
	spread := func(objs map[string]map[string]any, name string) []any {
		return list(mustGet(t, objs, "Deployment/olmv1-system/"+name), "spec", "template", "spec", "topologySpreadConstraints")
	}
	objs := render(t, ch, map[string]any{"rukpak": map[string]any{"replicas": 2}})
	if c := spread(objs, "catalogd"); c != nil {
		t.Errorf("one replica: want no topologySpreadConstraints, got %v", c)
	}
	c := spread(objs, "rukpak")
	if len(c) != 1 || get(c[0], "topologyKey") != "kubernetes.io/hostname" || get(c[0], "whenUnsatisfiable") != "ScheduleAnyway" ||
		fmt.Sprint(get(c[0], "maxSkew")) != "1" ||
		get(c[0], "labelSelector", "matchLabels", "app.kubernetes.io/name") != "rukpak" ||
		get(c[0], "labelSelector", "matchLabels", "app.kubernetes.io/instance") == nil {
		t.Errorf("rukpak with 2 replicas: topologySpreadConstraints %v", c)
	}
	pdb := mustGet(t, objs, "PodDisruptionBudget/olmv1-system/rukpak")
	if fmt.Sprint(get(pdb, "spec", "minAvailable")) != "1" || get(pdb, "spec", "selector", "matchLabels", "app.kubernetes.io/name") != "rukpak" {
		t.Errorf("rukpak PDB spec %v", pdb["spec"])
	}
	own := []any{map[string]any{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
		"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "rukpak"}}}}
	objs = render(t, ch, map[string]any{"rukpak": map[string]any{"replicas": 2, "topologySpreadConstraints": own}})
	if c := spread(objs, "rukpak"); len(c) != 1 || get(c[0], "topologyKey") != "topology.kubernetes.io/zone" {
		t.Errorf("the user's constraints replace the default: got %v", c)
	}
	objs = render(t, ch, map[string]any{"topologySpreadConstraints": own})
	if c := spread(objs, "catalogd"); len(c) != 1 {
		t.Errorf("global constraints apply to every component, also with one replica: got %v", c)
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	_, ch := loadChart(t)
	for name, vals := range map[string]map[string]any{
		"unknown TLS mode":    tlsValues("letsEncrypt"),
		"negative replicas":   {"rukpak": map[string]any{"replicas": -1}},
		"bad log level":       {"logLevel": "loud"},
		"unknown value":       {"catalgd": map[string]any{"replicas": 1}},
		"bad digest":          {"catalogd": map[string]any{"image": map[string]any{"repository": "catalogd", "digest": "latest"}}},
		"bad namespace":       {"namespace": map[string]any{"name": "Not_A_Namespace"}},
		"port out of range":   {"operatorController": map[string]any{"ports": map[string]any{"metrics": 70000, "probes": 9081}}},
		"extra arg not flag":  {"catalogd": map[string]any{"extraArgs": []any{"oops"}}},
		"cert-manager issuer": {"tls": map[string]any{"mode": "certManager", "certManager": map[string]any{"issuerRef": map[string]any{"kind": "Vault"}}}},
	} {
		_, err := Render(ch, vals, RenderOptions{})
		if err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: want a values schema error, got %v", name, err)
		}
	}
}

func TestStaticManifestRendersDeterministically(t *testing.T) {
	_, ch := loadChart(t)
	a, err := Render(ch, StaticManifestValues(), RenderOptions{IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(ch, StaticManifestValues(), RenderOptions{IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two renders of the static manifest differ")
	}
	for _, want := range []string{"kind: CustomResourceDefinition", "kind: Certificate", "cert-manager.io/inject-ca-from"} {
		if !strings.Contains(a, want) {
			t.Errorf("static manifest lacks %q", want)
		}
	}
	checkedIn, err := os.ReadFile(filepath.Join("..", "..", StaticManifestPath))
	if err != nil {
		t.Fatal(err)
	}
	if string(checkedIn) != StaticManifestHeader+a {
		t.Errorf("%s is stale: run `make generate`", StaticManifestPath)
	}
}
