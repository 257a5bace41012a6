package bundlevalidate

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/registryv1"
)

// The namespaces the conversion is tried with; only their shape matters.
const (
	installNamespace = "olmv1-validate"
	otherNamespace   = "olmv1-validate-watched"
)

// watchFor returns spec.config.watchNamespaces that selects install mode m.
func watchFor(m operatorsv1alpha1.InstallModeType) []string {
	switch m {
	case operatorsv1alpha1.InstallModeTypeOwnNamespace:
		return []string{installNamespace}
	case operatorsv1alpha1.InstallModeTypeSingleNamespace:
		return []string{otherNamespace}
	case operatorsv1alpha1.InstallModeTypeMultiNamespace:
		return []string{otherNamespace, otherNamespace + "-2"}
	}
	return nil
}

// runConversion converts the bundle with rukpak's registry+v1 provisioner (with a cert-manager
// certificate provider, so that webhooks are converted too) once per supported install mode (once in
// all, with the CSV's default, when none is supported or known). Identical messages are reported once.
//
// The conversion stops at the first problem it meets, which is almost always one the finer checks
// before it reported with file, field and fix; so its error is reported only when they found none.
func runConversion(content fs.FS, b *bundleFiles, r *Report) {
	earlier := r.Errors()
	var modes []operatorsv1alpha1.InstallModeType
	for _, m := range b.csv.Spec.InstallModes {
		for _, k := range knownInstallModes {
			if m.Type == k && m.Supported {
				modes = append(modes, k)
			}
		}
	}
	if len(modes) == 0 {
		modes = []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeAllNamespaces}
	}
	renderer := registryv1.New(registryv1.WithCertProvider(certs.NewCertManager(nil)))
	seen := map[string]bool{}
	for _, m := range modes {
		req := provisioner.Request{Content: content, Name: r.Package, InstallNamespace: installNamespace,
			Config: &rukpakv1alpha1.BundleConfig{WatchNamespaces: watchFor(m)}}
		_, err := renderer.Render(context.Background(), req)
		if err == nil {
			continue
		}
		msg := err.Error()
		if seen[msg] || earlier > 0 {
			continue
		}
		seen[msg] = true
		r.add(Problem{File: b.csvFile, Field: "(conversion, install mode " + string(m) + ")", Message: msg, Source: sourceRukpak})
	}
}

// validatePlain converts a plain bundle with rukpak's plain provisioner.
func validatePlain(dir string, r *Report) {
	if st, err := os.Stat(dir + "/manifests"); err != nil || !st.IsDir() {
		r.add(Problem{File: "manifests/", Message: "missing: a plain bundle holds its Kubernetes manifests in manifests/ (and a registry+v1 bundle also has metadata/annotations.yaml)", Fix: "put the manifests under manifests/"})
		return
	}
	_, err := plain.New().Render(context.Background(), provisioner.Request{Content: os.DirFS(dir), Name: "validate", InstallNamespace: installNamespace})
	if err != nil {
		r.add(Problem{File: "manifests/", Message: fmt.Sprint(err), Source: sourceRukpak})
	}
}
