package registryv1

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
)

func firstHook(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	if len(hooks) != 1 {
		t.Fatalf("%s %s has %d webhooks, want 1", u.GetKind(), u.GetName(), len(hooks))
	}
	return hooks[0].(map[string]any)
}

func TestWebhooksSelfSigned(t *testing.T) {
	r, err := renderFS(t, fixtureFS(t, nil), nil, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	svc := r.get("Service " + fixtureNS + "/widget-operator-service")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 {
		t.Fatalf("Service ports %v, want one (both webhooks share containerPort 443)", ports)
	}
	p := ports[0].(map[string]any)
	if p["port"] != int64(443) || p["targetPort"] != int64(9443) {
		t.Errorf("Service port %v, want 443 → 9443", p)
	}
	if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); !reflect.DeepEqual(sel, map[string]string{"app": "widget-operator"}) {
		t.Errorf("Service selector %v", sel)
	}

	sec := r.get("Secret " + fixtureNS + "/widget-operator-service-cert")
	if str(sec, "type") != string(corev1.SecretTypeTLS) {
		t.Errorf("Secret type %q", str(sec, "type"))
	}
	crtB64 := str(sec, "data", "tls.crt")
	crtPEM, err := base64.StdEncoding.DecodeString(crtB64)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(crtPEM)
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(testCA.Cert)
	if _, err := crt.Verify(x509.VerifyOptions{DNSName: "widget-operator-service." + fixtureNS + ".svc", Roots: pool, CurrentTime: testCA.Cert.NotBefore.Add(1)}); err != nil {
		t.Errorf("serving certificate does not verify for the Service DNS name: %v", err)
	}

	for kind, name := range map[string]string{"ValidatingWebhookConfiguration": "vwidget.example.com", "MutatingWebhookConfiguration": "mwidget.example.com"} {
		h := firstHook(t, r.get(kind+" /"+name))
		if h["name"] != name {
			t.Errorf("%s webhook name %v", kind, h["name"])
		}
		svcRef, _, _ := unstructured.NestedMap(h, "clientConfig", "service")
		if svcRef["name"] != "widget-operator-service" || svcRef["namespace"] != fixtureNS || svcRef["port"] != int64(443) {
			t.Errorf("%s clientConfig.service %v", kind, svcRef)
		}
		ca, _, _ := unstructured.NestedString(h, "clientConfig", "caBundle")
		if got, _ := base64.StdEncoding.DecodeString(ca); !bytes.Equal(got, testCA.CertPEM) {
			t.Errorf("%s caBundle is not the CA certificate", kind)
		}
		if rules, _, _ := unstructured.NestedSlice(h, "rules"); len(rules) != 1 {
			t.Errorf("%s rules %v", kind, rules)
		}
	}
	if p, _, _ := unstructured.NestedString(firstHook(t, r.get("MutatingWebhookConfiguration /mwidget.example.com")), "clientConfig", "service", "path"); p != "/mutate-widget" {
		t.Errorf("mutating path %q", p)
	}

	// The serving Secret replaces the bundle's own cert volume at the controller-runtime path.
	d := typedDeployment(t, r, "widget-operator")
	pod := d.Spec.Template.Spec
	var vols []string
	for _, v := range pod.Volumes {
		vols = append(vols, v.Name)
		if v.Secret != nil && v.Secret.SecretName != "widget-operator-service-cert" {
			t.Errorf("volume %s uses Secret %s", v.Name, v.Secret.SecretName)
		}
	}
	if !reflect.DeepEqual(vols, []string{webhookCertVolume, apiserviceCertVolume}) {
		t.Errorf("volumes %v: the bundle's unused cert volume is replaced", vols)
	}
	for _, c := range pod.Containers {
		paths := map[string]string{}
		for _, m := range c.VolumeMounts {
			if _, dup := paths[m.MountPath]; dup {
				t.Errorf("container %s mounts %s twice", c.Name, m.MountPath)
			}
			paths[m.MountPath] = m.Name
		}
		if paths[webhookCertPath] != webhookCertVolume || paths[apiserviceCertPath] != apiserviceCertVolume {
			t.Errorf("container %s mounts %v", c.Name, paths)
		}
	}
	// A Deployment without webhooks is left alone.
	if vols := typedDeployment(t, r, "widget-reporter").Spec.Template.Spec.Volumes; len(vols) != 0 {
		t.Errorf("widget-reporter volumes %v", vols)
	}
}

func TestWebhooksCertManager(t *testing.T) {
	r, err := renderFS(t, fixtureFS(t, nil), nil, WithCertProvider(certs.NewCertManager(nil)))
	if err != nil {
		t.Fatal(err)
	}
	iss := r.get("Issuer " + fixtureNS + "/widget-operator-service-selfsigned")
	if _, ok, _ := unstructured.NestedMap(iss.Object, "spec", "selfSigned"); !ok {
		t.Errorf("Issuer is not selfSigned: %v", iss.Object["spec"])
	}
	crt := r.get("Certificate " + fixtureNS + "/widget-operator-service-cert")
	if str(crt, "spec", "secretName") != "widget-operator-service-cert" || str(crt, "spec", "issuerRef", "name") != "widget-operator-service-selfsigned" {
		t.Errorf("Certificate spec %v", crt.Object["spec"])
	}
	dns, _, _ := unstructured.NestedStringSlice(crt.Object, "spec", "dnsNames")
	if dns[0] != "widget-operator-service."+fixtureNS+".svc" {
		t.Errorf("dnsNames %v", dns)
	}
	if r.has("Secret " + fixtureNS + "/widget-operator-service-cert") {
		t.Errorf("cert-manager writes the Secret; rukpak must not render it")
	}
	for _, key := range []string{"ValidatingWebhookConfiguration /vwidget.example.com", "MutatingWebhookConfiguration /mwidget.example.com"} {
		wc := r.get(key)
		if got := wc.GetAnnotations()[certs.InjectCAFromAnnotation]; got != fixtureNS+"/widget-operator-service-cert" {
			t.Errorf("%s %s = %q", key, certs.InjectCAFromAnnotation, got)
		}
		if _, found, _ := unstructured.NestedString(firstHook(t, wc), "clientConfig", "caBundle"); found {
			t.Errorf("%s has a caBundle; the cainjector fills it", key)
		}
	}

	withIssuer, err := renderFS(t, fixtureFS(t, nil), nil, WithCertProvider(certs.NewCertManager(&certs.IssuerRef{Kind: "ClusterIssuer", Name: "corp-ca"})))
	if err != nil {
		t.Fatal(err)
	}
	if withIssuer.count("Issuer") != 0 || str(withIssuer.get("Certificate "+fixtureNS+"/widget-operator-service-cert"), "spec", "issuerRef", "kind") != "ClusterIssuer" {
		t.Errorf("with an IssuerRef no Issuer is rendered and the Certificate uses it")
	}
}

func TestWebhooksOpenShiftServiceCA(t *testing.T) {
	r, err := renderFS(t, fixtureFS(t, nil), nil, WithCertProvider(certs.NewOpenShiftServiceCA()))
	if err != nil {
		t.Fatal(err)
	}
	svc := r.get("Service " + fixtureNS + "/widget-operator-service")
	if got := svc.GetAnnotations()[certs.ServingCertSecretAnnotation]; got != "widget-operator-service-cert" {
		t.Errorf("Service annotation %s = %q", certs.ServingCertSecretAnnotation, got)
	}
	if got := r.get("ValidatingWebhookConfiguration /vwidget.example.com").GetAnnotations()[certs.InjectCABundleAnnotation]; got != "true" {
		t.Errorf("inject-cabundle annotation = %q", got)
	}
	if r.count("Secret") != 0 {
		t.Errorf("service-ca writes the Secret; rukpak must not render it")
	}
}

const conversionWebhook = `  - type: ConversionWebhook
    generateName: cwidget.example.com
    deploymentName: widget-operator
    containerPort: 443
    targetPort: 9443
    admissionReviewVersions: [v1]
    sideEffects: None
    webhookPath: /convert
    conversionCRDs: [widgets.example.com]
  - type: MutatingAdmissionWebhook
`

func TestConversionWebhook(t *testing.T) {
	content := fixtureFS(t, editCSV(t, "  - type: MutatingAdmissionWebhook\n", conversionWebhook))
	r, err := renderFS(t, content, nil, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	crd := r.get("CustomResourceDefinition /widgets.example.com")
	if s := str(crd, "spec", "conversion", "strategy"); s != "Webhook" {
		t.Fatalf("conversion strategy %q", s)
	}
	svcRef, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service")
	if svcRef["name"] != "widget-operator-service" || svcRef["path"] != "/convert" || svcRef["port"] != int64(443) {
		t.Errorf("conversion service %v", svcRef)
	}
	if ca := str(crd, "spec", "conversion", "webhook", "clientConfig", "caBundle"); ca == "" {
		t.Errorf("conversion caBundle missing")
	}
	if v, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "conversion", "webhook", "conversionReviewVersions"); !reflect.DeepEqual(v, []string{"v1"}) {
		t.Errorf("conversionReviewVersions %v", v)
	}

	cm, err := renderFS(t, content, nil, WithCertProvider(certs.NewCertManager(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.get("CustomResourceDefinition /widgets.example.com").GetAnnotations()[certs.InjectCAFromAnnotation]; got == "" {
		t.Errorf("cert-manager: CRD lacks %s", certs.InjectCAFromAnnotation)
	}

	_, err = renderFS(t, content, watch(fixtureNS), selfSigned)
	wantInvalid(t, err, "UnsupportedInstallMode", "conversion webhook", "AllNamespaces")

	missing := fixtureFS(t, editCSV(t, "  - type: MutatingAdmissionWebhook\n",
		"  - type: ConversionWebhook\n    generateName: c.example.com\n    deploymentName: widget-operator\n    targetPort: 9443\n    admissionReviewVersions: [v1]\n    sideEffects: None\n    conversionCRDs: [gadgets.example.com]\n  - type: MutatingAdmissionWebhook\n"))
	_, err = renderFS(t, missing, nil, selfSigned)
	wantInvalid(t, err, "InvalidBundle", `names CRD "gadgets.example.com", which is not in the bundle`)
}

func TestWebhookErrors(t *testing.T) {
	_, err := renderFS(t, fixtureFS(t, nil), nil)
	wantInvalid(t, err, "WebhooksUnsupported", "certificate provider")

	_, err = renderFS(t, fixtureFS(t, editCSV(t, "deploymentName: widget-operator\n    containerPort: 443\n    targetPort: 9443\n    admissionReviewVersions: [v1]\n    sideEffects: None\n    failurePolicy: Fail\n    webhookPath: /mutate-widget",
		"deploymentName: nope\n    containerPort: 443\n    targetPort: 9443\n    admissionReviewVersions: [v1]\n    sideEffects: None\n    failurePolicy: Fail\n    webhookPath: /mutate-widget")), nil, selfSigned)
	wantInvalid(t, err, "InvalidBundle", `deploymentName "nope"`, "mwidget.example.com")

	_, err = renderFS(t, fixtureFS(t, editCSV(t, "- type: MutatingAdmissionWebhook\n    generateName: mwidget.example.com\n    deploymentName: widget-operator\n    containerPort: 443\n    targetPort: 9443",
		"- type: MutatingAdmissionWebhook\n    generateName: mwidget.example.com\n    deploymentName: widget-operator\n    containerPort: 443\n    targetPort: 8443")), nil, selfSigned)
	wantInvalid(t, err, "InvalidBundle", "containerPort 443 targets 8443", "targets 9443")
}

// spec.config.olmv0 renders a webhook Deployment exactly as OLM v0's installer does
// (operator-lifecycle-manager pkg/controller/install/certresources.go, cited in docs/migration.md):
// its cert volumes, and its pod template annotations (olmcahash, the CSV's, not the bundle's own),
// so that a Deployment OLM v0 installed is adopted with its pod template unchanged.
func TestWebhooksOLMv0Rendering(t *testing.T) {
	v0CA := []byte("-----BEGIN CERTIFICATE-----\nb2xtIHYwJ3MgQ0E=\n-----END CERTIFICATE-----\n")
	olmv0 := &rukpakv1alpha1.BundleConfig{OLMv0: &rukpakv1alpha1.OLMv0Rendering{CAHash: "0a1b2c", CABundle: v0CA}}
	r, err := renderFS(t, fixtureFS(t, nil), olmv0, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	// OLM v0's CA is trusted beside rukpak's until the pods serve rukpak's certificate.
	for _, name := range []string{"ValidatingWebhookConfiguration /vwidget.example.com", "MutatingWebhookConfiguration /mwidget.example.com"} {
		ca, _, _ := unstructured.NestedString(firstHook(t, r.get(name)), "clientConfig", "caBundle")
		got, _ := base64.StdEncoding.DecodeString(ca)
		if want := append(append([]byte(nil), testCA.CertPEM...), v0CA...); !bytes.Equal(got, want) {
			t.Errorf("%s caBundle\n%s\nwant rukpak's CA then OLM v0's:\n%s", name, got, want)
		}
	}
	secret := "widget-operator-service-cert"
	want := []corev1.Volume{
		{Name: "apiservice-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret,
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "apiserver.crt"}, {Key: "tls.key", Path: "apiserver.key"}}}}},
		{Name: "webhook-cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret,
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}},
	}
	pod := typedDeployment(t, r, "widget-operator").Spec.Template.Spec
	// The bundle's own volume "cert", mounted at the controller-runtime path, is replaced (and,
	// unused, dropped); OLM v0's two volumes follow in its order.
	if !reflect.DeepEqual(pod.Volumes, want) {
		t.Errorf("volumes\n got %+v\nwant %+v", pod.Volumes, want)
	}
	// The Service's ports are named as OLM v0 names them.
	if ports, _, _ := unstructured.NestedSlice(r.get("Service "+fixtureNS+"/widget-operator-service").Object, "spec", "ports"); len(ports) != 1 || ports[0].(map[string]any)["name"] != "443" {
		t.Errorf("Service ports %v, want one named 443", ports)
	}
	// The pod template's annotations are OLM v0's: olmcahash, the CSV's (capabilities comes from the
	// CSV, the bundle's own value is dropped), and OLM's.
	d := typedDeployment(t, r, "widget-operator")
	if a := d.Spec.Template.Annotations; a[OLMCAHashAnnotation] != "0a1b2c" || a["capabilities"] != "Basic Install" || a[OperatorNamespaceAnnotation] != fixtureNS {
		t.Errorf("webhook Deployment's pod template annotations %v", a)
	}
	// A Deployment without webhooks keeps the bundle's own, and gets no olmcahash.
	if a := typedDeployment(t, r, "widget-reporter").Spec.Template.Annotations; a[OLMCAHashAnnotation] != "" {
		t.Errorf("widget-reporter's pod template annotations %v", a)
	}
	mounts := map[string][]corev1.VolumeMount{}
	for _, c := range pod.Containers {
		mounts[c.Name] = c.VolumeMounts
	}
	wantMounts := map[string][]corev1.VolumeMount{
		// the mount at the same path is replaced where it stood; the other is appended
		"manager": {{Name: "webhook-cert", MountPath: webhookCertPath}, {Name: "apiservice-cert", MountPath: apiserviceCertPath}},
		"sidecar": {{Name: "apiservice-cert", MountPath: apiserviceCertPath}, {Name: "webhook-cert", MountPath: webhookCertPath}},
	}
	if !reflect.DeepEqual(mounts, wantMounts) {
		t.Errorf("volume mounts\n got %+v\nwant %+v", mounts, wantMounts)
	}

	// A volume of the same name is replaced where it stands; a mount of it is kept as it is.
	r, err = renderFS(t, fixtureFS(t, editCSV(t, `                volumeMounts:
                - name: cert
                  mountPath: /tmp/k8s-webhook-server/serving-certs
                  readOnly: true`, `                volumeMounts:
                - name: webhook-cert
                  mountPath: /tmp/k8s-webhook-server/serving-certs
                  readOnly: true`)), olmv0, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	pod = typedDeployment(t, r, "widget-operator").Spec.Template.Spec
	if len(pod.Volumes) != 3 || pod.Volumes[0].Name != "cert" || !reflect.DeepEqual(pod.Volumes[1:], want) {
		t.Errorf("volumes %+v: want the bundle's cert volume (not replaced: its mount was not), then OLM v0's two", pod.Volumes)
	}
	if m := pod.Containers[0].VolumeMounts; len(m) != 2 || !m[0].ReadOnly || m[0].Name != "webhook-cert" {
		t.Errorf("manager mounts %+v: want the bundle's webhook-cert mount kept as it was", m)
	}

	// Without olmv0 the layout is rukpak's.
	r, err = renderFS(t, fixtureFS(t, nil), &rukpakv1alpha1.BundleConfig{}, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	var vols []string
	for _, v := range typedDeployment(t, r, "widget-operator").Spec.Template.Spec.Volumes {
		vols = append(vols, v.Name)
	}
	if !reflect.DeepEqual(vols, []string{webhookCertVolume, apiserviceCertVolume}) {
		t.Errorf("Default volumes %v", vols)
	}
}
