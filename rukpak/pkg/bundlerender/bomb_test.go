package bundlerender

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// TestRenderRefusesAliasBombs: rendering a plain or registry+v1 bundle whose manifest is a YAML
// alias bomb fails with the provisioner's InvalidBundle error naming the file, without expanding it.
func TestRenderRefusesAliasBombs(t *testing.T) {
	var laughs strings.Builder
	laughs.WriteString("l0: &l0 \"lol\"\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&laughs, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	for name, files := range map[string]map[string]string{
		"plain": {"manifests/laughs.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n" + laughs.String()},
		"registry+v1": {
			"metadata/annotations.yaml":                   "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n",
			"manifests/laughs.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: laughs.v1.0.0\n" + laughs.String(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, data := range files {
				p := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Render(t.Context(), dir, Options{InstallNamespace: "operators"})
			var ib *provisioner.InvalidBundleError
			if !errors.As(err, &ib) || ib.Reason != "InvalidBundle" {
				t.Fatalf("want an InvalidBundle error, got %v", err)
			}
			if !strings.Contains(err.Error(), "laughs") || !strings.Contains(err.Error(), "(document 1): refused: its YAML aliases (*name)") {
				t.Errorf("message: %v", err)
			}
		})
	}
}
