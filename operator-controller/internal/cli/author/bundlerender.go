package author

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/pull"
	"github.com/olmv1/olmv1/platform/yamlalias"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// newBundleRenderCommand is `bundle render`: the objects rukpak would apply for a bundle.
func newBundleRenderCommand(o *options) *cobra.Command {
	var (
		installNamespace, name, deploymentConfig, valuesFile, certProvider, path string
		watchNamespaces                                                          []string
		insecure                                                                 bool
	)
	cmd := &cobra.Command{
		Use:   "render DIR|IMAGE",
		Short: "Print exactly the objects rukpak would apply for a bundle (like helm template)",
		Long: `Render a bundle directory or image into the objects a BundleDeployment of it would apply:
the provisioner's own code (registry+v1, plain, Helm or kustomize, detected from the content), then
rukpak's own preparation (owner labels, namespaces, apply order). Nothing is sent to a cluster.

For registry+v1 bundles the install mode follows rukpak's rule: with --watch-namespaces unset,
AllNamespaces if the CSV supports it, else OwnNamespace; the mode used is printed on stderr.
Webhook certificates use --cert-provider (certManager by default; selfSigned makes a throwaway CA,
so its certificates differ on every run). Kinds the bundle does not define are scoped by a built-in
table of Kubernetes' cluster-scoped kinds; others are treated as namespaced.

The output is one YAML stream in apply order (-o json: a JSON list). The install namespace defaults
to the bundle's suggested namespace (operatorframework.io/suggested-namespace), else its package
name, else "default".`,
		Example: `  kubectl olmv1 bundle render ./bundle
  kubectl olmv1 bundle render quay.io/me/my-operator-bundle:v1.2.0 --install-namespace operators --watch-namespaces team-a
  kubectl olmv1 bundle render ./bundle --deployment-config dc.yaml --cert-provider selfSigned
  kubectl olmv1 bundle render ./chart --values prod-values.yaml
  kubectl olmv1 bundle render ./kustomize --path overlays/prod`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, remove, err := bundleSourceDir(cmd.Context(), args[0], insecure)
			if err != nil {
				return err
			}
			defer remove()
			cfg, err := renderBundleConfig(watchNamespaces, path, deploymentConfig, valuesFile)
			if err != nil {
				return err
			}
			if installNamespace == "" {
				installNamespace = suggestedNamespace(dir)
			}
			res, err := bundlerender.Render(cmd.Context(), dir, bundlerender.Options{
				Name: name, InstallNamespace: installNamespace, Config: cfg, CertProvider: certProvider,
			})
			if err != nil {
				return err
			}
			return o.writeRenderedBundle(res, installNamespace)
		},
	}
	f := cmd.Flags()
	f.StringVar(&installNamespace, "install-namespace", "", "the BundleDeployment's spec.installNamespace (default: the bundle's suggested namespace, else its package name)")
	f.StringSliceVar(&watchNamespaces, "watch-namespaces", nil, "registry+v1: spec.config.watchNamespaces, comma-separated (default: AllNamespaces if supported, else OwnNamespace)")
	f.StringVar(&deploymentConfig, "deployment-config", "", "registry+v1: a YAML file holding spec.config.deploymentConfig")
	f.StringVar(&certProvider, "cert-provider", bundlerender.CertManager, "registry+v1 webhook certificates: certManager, selfSigned or openshiftServiceCA")
	f.StringVar(&valuesFile, "values", "", "Helm: a YAML file of values (spec.config.values)")
	f.StringVar(&path, "path", "", "kustomize: the overlay directory inside the bundle (spec.config.path)")
	f.StringVar(&name, "name", "", "the BundleDeployment's name, used in the owner labels (default: bundle)")
	f.BoolVar(&insecure, "insecure", false, "pull IMAGE over plain HTTP")
	return cmd
}

// bundleSourceDir is src when it is a directory, else the directory src (an image) is pulled to;
// call remove when done with it.
func bundleSourceDir(ctx context.Context, src string, insecure bool) (dir string, remove func(), err error) {
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		return src, func() {}, nil
	}
	pulled, remove, err := pull.ToDir(ctx, src, insecure)
	if err != nil {
		return "", nil, fmt.Errorf("%s is neither a directory nor a pullable image: %w", src, err)
	}
	return pulled, remove, nil
}

// renderBundleConfig is the BundleDeployment's spec.config that bundle render's flags describe:
// watchNamespaces and path as given, the deployment config and Helm values read from their files.
func renderBundleConfig(watchNamespaces []string, path, deploymentConfig, valuesFile string) (*rukpakv1alpha1.BundleConfig, error) {
	cfg := &rukpakv1alpha1.BundleConfig{WatchNamespaces: watchNamespaces, Path: path}
	if deploymentConfig != "" {
		data, err := os.ReadFile(deploymentConfig)
		if err != nil {
			return nil, err
		}
		if err := yamlalias.CheckFile(data); err != nil {
			return nil, fmt.Errorf("--deployment-config %s: %w", deploymentConfig, err)
		}
		cfg.DeploymentConfig = &rukpakv1alpha1.DeploymentConfig{}
		if err := yaml.UnmarshalStrict(data, cfg.DeploymentConfig); err != nil {
			return nil, fmt.Errorf("--deployment-config %s: %w (it holds a BundleDeployment's spec.config.deploymentConfig: env, resources, nodeSelector, tolerations, affinity, ...)", deploymentConfig, err)
		}
	}
	if valuesFile != "" {
		data, err := os.ReadFile(valuesFile)
		if err != nil {
			return nil, err
		}
		if err := yamlalias.CheckFile(data); err != nil {
			return nil, fmt.Errorf("--values %s: %w", valuesFile, err)
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("--values %s: %w", valuesFile, err)
		}
		cfg.Values = &apiextensionsv1.JSON{Raw: j}
	}
	return cfg, nil
}

// writeRenderedBundle says on ErrOut what was rendered for installNamespace and prints the objects
// of res: one YAML stream, or a JSON list with -o json.
func (o *options) writeRenderedBundle(res *bundlerender.Result, installNamespace string) error {
	what := string(res.Provisioner)
	if res.Description != "" {
		what += ", " + res.Description
	}
	fmt.Fprintf(o.ErrOut, "# %d objects (%s) for install namespace %q\n", len(res.Objects), what, installNamespace)
	if o.Output == "json" {
		data, err := json.MarshalIndent(res.Objects, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(data))
		return err
	}
	data, err := bundlerender.YAML(res.Objects)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}

// suggestedNamespace is the namespace an Operator would install a registry+v1 bundle into by
// default: the CSV's operatorframework.io/suggested-namespace, else the package name; "default" for
// other bundles.
func suggestedNamespace(dir string) string {
	entries, _ := os.ReadDir(filepath.Join(dir, "manifests"))
	for _, e := range entries {
		if !strings.Contains(e.Name(), ".clusterserviceversion.") {
			continue
		}
		var csv struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if data, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name())); err == nil && yamlalias.CheckFile(data) == nil && yaml.Unmarshal(data, &csv) == nil {
			if ns := csv.Metadata.Annotations["operatorframework.io/suggested-namespace"]; ns != "" {
				return ns
			}
		}
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml")); err == nil && yamlalias.CheckFile(data) == nil && yaml.Unmarshal(data, &ann) == nil {
		if pkg := ann.Annotations["operators.operatorframework.io.bundle.package.v1"]; pkg != "" {
			return pkg
		}
	}
	return "default"
}
