package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/preview"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// writeKubeconfig writes a kubeconfig for the suite's API server (admin) and returns its path.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: restConfig.CertData, ClientKeyData: restConfig.KeyData, Token: restConfig.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = "envtest"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCLI runs kubectl olmv1 against the suite's API server.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Execute(t.Context(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append([]string{"--kubeconfig", writeKubeconfig(t)}, args...))
	return out.String(), errOut.String(), err
}

// kubectl olmv1 install --bundle IMAGE --dry-run, on a real API server with the image in a real
// registry: it prints the Operator, namespace and BundleDeployment that would be created, the
// bundle's objects as rukpak renders them, and what the bundle declares, each dependency checked
// against the cluster; nothing is created.
func TestInstallBundleDryRun(t *testing.T) {
	ref, _ := pushBundle(t, "direct-gadget", "dryrun/gadget-bundle", "1.2.0")
	out, errOut, err := runCLI(t, "install", "gadget-dry", "--bundle", ref, "--dry-run", "--insecure")
	if err != nil {
		t.Fatalf("install --bundle --dry-run: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("kubectl olmv1 install gadget-dry --bundle %s --dry-run\n%s", ref, out)
	for _, want := range []string{
		"gadget-dry", "gadget.v1.2.0", "1.2.0",
		"installed directly (spec.source.type Bundle, format RegistryV1): no catalog is read and nothing is resolved",
		"declares olm.gvk.required wheels.example.com/v1 Wheel: Missing, not installed for it",
		"declares olm.package.required sprocket >=1.0.0 <2.0.0: Missing",
		"dependency olm.gvk.required wheels.example.com/v1 Wheel is missing on the cluster and is not installed for a direct bundle",
		"(dry run: nothing was changed in the cluster)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, row := range [][]string{
		{"create", "Operator", "gadget-dry", "kubectl olmv1"},
		{"create", "Namespace", "gadget-dry", "operator-controller"},
		{"create", "BundleDeployment", "gadget-dry", "operator-controller"},
		{"create", "CustomResourceDefinition", "gadgets.gadgets.example.com", "rukpak"},
		{"create", "Deployment", "gadget-dry", "gadget-controller", "rukpak"},
	} {
		if !hasRow(out, row) {
			t.Errorf("output lacks a row with %q", row)
		}
	}

	// -o json: the plan as data.
	out, _, err = runCLI(t, "install", "gadget-dry", "--bundle", ref, "--dry-run", "--insecure", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var plan preview.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if plan.Package != "gadget" || plan.To != "1.2.0" || len(plan.Bundles) != 1 || plan.Bundles[0].Bundle != "gadget.v1.2.0" || plan.Bundles[0].Image != ref {
		t.Errorf("plan %+v", plan)
	}
	for _, o := range plan.Objects {
		if o.Kind == "BundleDeployment" {
			if src, _, _ := unstructured.NestedString(o.Object.Object, "spec", "source", "image", "ref"); src != ref {
				t.Errorf("BundleDeployment source %q", src)
			}
		}
	}

	// Nothing was created.
	ctx := context.Background()
	for _, obj := range []client.Object{&operatorsv1alpha1.Operator{}, &rukpakv1alpha1.BundleDeployment{}, &corev1.Namespace{}} {
		if err := k8s.Get(ctx, client.ObjectKey{Name: "gadget-dry"}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T gadget-dry after a dry run: %v", obj, err)
		}
	}

	// A git source is planned without fetching it; the refusals of catalog flags stay.
	out, errOut, err = runCLI(t, "install", "gadget-git", "--bundle", "https://git.test/gadget.git#tag=v1.2.0", "--dry-run")
	if err != nil || !strings.Contains(out, "the preview pulls images only") || !hasRow(out, []string{"create", "BundleDeployment", "gadget-git"}) {
		t.Errorf("git --dry-run: %v\n%s\n%s", err, out, errOut)
	}
	if _, _, err := runCLI(t, "install", "gadget-dry", "--bundle", ref, "--dry-run", "--version", "1.2.0"); err == nil ||
		!strings.Contains(err.Error(), "--version cannot be used with --bundle") {
		t.Errorf("--version with --bundle: %v", err)
	}
}

// hasRow reports whether a line of out holds every field, in order.
func hasRow(out string, fields []string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := line, true
		for _, f := range fields {
			i := strings.Index(rest, f)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(f):]
		}
		if ok {
			return true
		}
	}
	return false
}
