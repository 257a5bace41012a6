// Command olmv1-chart renders, installs and uninstalls the OLM v1 chart (deploy/charts/olmv1) with the
// Helm Go library, for machines without a helm binary:
//
//	olmv1-chart render [--repo DIR] [--out FILE]       the static manifest (deploy/manifests/olmv1.yaml)
//	olmv1-chart template [--values FILE] [--image-registry R] [--image-tag T] [--tls-mode M] [--include-crds]
//	olmv1-chart install --kubeconfig F [--image-registry R] [--image-tag T] [--values FILE] [--release NAME]
//	olmv1-chart uninstall --kubeconfig F [--release NAME]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/e2e/chart"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "olmv1-chart:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: olmv1-chart render|template|install|uninstall [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	repo := fs.String("repo", ".", "repository root (the chart is in deploy/charts/olmv1)")
	out := fs.String("out", "", "render: file to write (default: stdout)")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "install/uninstall: kubeconfig of the cluster")
	release := fs.String("release", "olmv1", "release name (prefixes cluster-scoped object names)")
	releaseNS := fs.String("release-namespace", "default", "namespace of the Helm release record")
	valuesFile := fs.String("values", "", "install: a values file on top of the chart's values.yaml")
	registry := fs.String("image-registry", "", "install: image.registry (e.g. what `make push-images REGISTRY=...` pushed to)")
	tag := fs.String("image-tag", "", "install/template: image.tag")
	tlsMode := fs.String("tls-mode", "", "install/template: tls.mode (selfSigned, certManager, openshiftServiceCA)")
	includeCRDs := fs.Bool("include-crds", false, "template: prepend the CRDs")
	timeout := fs.Duration("timeout", 5*time.Minute, "install/uninstall timeout")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ch, err := chart.Load(chart.Dir(*repo))
	if err != nil {
		return err
	}
	vals, err := values(*valuesFile, *registry, *tag, *tlsMode)
	if err != nil {
		return err
	}
	switch args[0] {
	case "template":
		manifest, err := chart.Render(ch, vals, chart.RenderOptions{ReleaseName: *release, IncludeCRDs: *includeCRDs})
		if err != nil {
			return err
		}
		_, err = os.Stdout.WriteString(manifest)
		return err
	case "render":
		manifest, err := chart.Render(ch, chart.StaticManifestValues(), chart.RenderOptions{IncludeCRDs: true})
		if err != nil {
			return err
		}
		data := []byte(chart.StaticManifestHeader + manifest)
		if *out == "" {
			_, err = os.Stdout.Write(data)
			return err
		}
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(*out, data, 0o644)
	case "install", "uninstall":
		if *kubeconfig == "" {
			return fmt.Errorf("%s needs --kubeconfig or $KUBECONFIG", args[0])
		}
		c, err := chart.NewClient(*kubeconfig, *releaseNS, os.Stderr)
		if err != nil {
			return err
		}
		if args[0] == "uninstall" {
			return c.Uninstall(*release, *timeout)
		}
		rel, err := c.Install(context.Background(), ch, *release, vals, *timeout)
		if err != nil {
			return err
		}
		fmt.Printf("release %s revision %d: %s\n", rel.Name, rel.Version, rel.Info.Status)
		return nil
	}
	return fmt.Errorf("unknown command %q: want render, template, install or uninstall", args[0])
}

// values reads valuesFile (optional) and sets image.registry, image.tag and tls.mode when given.
func values(valuesFile, registry, tag, tlsMode string) (map[string]any, error) {
	vals := map[string]any{}
	if valuesFile != "" {
		b, err := os.ReadFile(valuesFile)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(b, &vals); err != nil {
			return nil, fmt.Errorf("%s: %w", valuesFile, err)
		}
	}
	set := func(section, key, v string) {
		if v == "" {
			return
		}
		m, _ := vals[section].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[key] = v
		vals[section] = m
	}
	set("image", "registry", registry)
	set("image", "tag", tag)
	set("tls", "mode", tlsMode)
	return vals, nil
}
