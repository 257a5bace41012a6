// Package chart loads, lints, renders, installs and uninstalls the OLM v1 Helm chart
// (deploy/charts/olmv1) with the Helm Go library: no helm binary is needed. The chart's unit tests, the
// `chart` e2e spec, `make generate` (deploy/manifests/olmv1.yaml) and `make kind-e2e` all go through it.
package chart

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"
)

// RelDir is the chart's directory relative to the repository root.
const RelDir = "deploy/charts/olmv1"

// Dir is the chart's directory in the repository at repoRoot.
func Dir(repoRoot string) string { return filepath.Join(repoRoot, RelDir) }

// Load reads the chart directory.
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart in %s: %w", dir, err)
	}
	return ch, nil
}

// Lint runs Helm's linter (chart metadata, values schema, templates render and parse as YAML) with
// vals on top of values.yaml, and returns every finding at or above warning severity.
func Lint(dir string, vals map[string]any) []string {
	l := action.NewLint()
	l.Strict = true
	res := l.Run([]string{dir}, vals)
	var out []string
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, m.Error())
		}
	}
	if len(out) == 0 {
		for _, err := range res.Errors {
			out = append(out, err.Error())
		}
	}
	return out
}

// RenderOptions select what Render produces.
type RenderOptions struct {
	// ReleaseName defaults to "olmv1"; it prefixes the cluster-scoped object names.
	ReleaseName string
	// Namespace is the release's namespace (default "default"); the objects go to namespace.name.
	Namespace string
	// IncludeCRDs prepends the chart's crds/ to the manifest (as `helm template --include-crds`).
	IncludeCRDs bool
}

// Render renders the chart offline like `helm template`: nothing is looked up in a cluster (so
// selfSigned certificates are new on every call). It returns the manifest as one YAML stream.
func Render(ch *chart.Chart, vals map[string]any, o RenderOptions) (string, error) {
	i := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	i.DryRun, i.ClientOnly, i.Replace = true, true, true
	i.ReleaseName = orDefault(o.ReleaseName, "olmv1")
	i.Namespace = orDefault(o.Namespace, "default")
	i.IncludeCRDs = o.IncludeCRDs
	// A fixed version: rendering must not depend on the Helm library's defaults.
	i.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := i.Run(ch, vals)
	if err != nil {
		return "", fmt.Errorf("rendering the chart: %w", err)
	}
	return rel.Manifest, nil
}

// Objects splits a rendered manifest into its objects (comments and empty documents dropped).
func Objects(manifest string) ([]map[string]any, error) {
	var out []map[string]any
	for _, doc := range strings.Split(manifest, "\n---") {
		var obj map[string]any
		if err := yaml.UnmarshalStrict([]byte(doc), &obj); err != nil { // strict: duplicate keys are errors
			return nil, fmt.Errorf("parsing a rendered document: %w\n%s", err, doc)
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
	return out, nil
}

// Client installs and uninstalls releases in the cluster named by a kubeconfig.
type Client struct {
	cfg       *action.Configuration
	namespace string
}

// NewClient returns a client storing releases (as Secrets) in namespace of the kubeconfig's cluster.
// log receives Helm's progress lines (nil discards them).
func NewClient(kubeconfig, namespace string, log io.Writer) (*Client, error) {
	if log == nil {
		log = io.Discard
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &namespace
	cfg := &action.Configuration{}
	logf := func(format string, v ...any) { fmt.Fprintf(log, "helm: "+format+"\n", v...) }
	if err := cfg.Init(flags, namespace, "secret", logf); err != nil {
		return nil, fmt.Errorf("initializing Helm for %s: %w", kubeconfig, err)
	}
	return &Client{cfg: cfg, namespace: namespace}, nil
}

// Install installs (or, when the release exists, upgrades) the chart as release name with vals.
// The chart's CRDs are created when missing and left alone otherwise.
func (c *Client) Install(ctx context.Context, ch *chart.Chart, name string, vals map[string]any, timeout time.Duration) (*release.Release, error) {
	hist := action.NewHistory(c.cfg)
	hist.Max = 1
	if _, err := hist.Run(name); err == nil {
		u := action.NewUpgrade(c.cfg)
		u.Namespace, u.Timeout = c.namespace, timeout
		rel, err := u.RunWithContext(ctx, name, ch, vals)
		if err != nil {
			return nil, fmt.Errorf("upgrading release %s: %w", name, err)
		}
		return rel, nil
	}
	i := action.NewInstall(c.cfg)
	i.ReleaseName, i.Namespace, i.Timeout = name, c.namespace, timeout
	rel, err := i.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("installing release %s: %w", name, err)
	}
	return rel, nil
}

// Uninstall removes release name and everything it created (not the CRDs: Helm never deletes those).
func (c *Client) Uninstall(name string, timeout time.Duration) error {
	u := action.NewUninstall(c.cfg)
	u.Timeout = timeout
	if _, err := u.Run(name); err != nil {
		return fmt.Errorf("uninstalling release %s: %w", name, err)
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
