package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

// clusterOutput is what `deppy resolve --kubeconfig -o yaml|json` prints.
type clusterOutput struct {
	// Catalogs are the serving Catalogs resolved against.
	Catalogs  []string          `json:"catalogs"`
	Operators []operatorOutcome `json:"operators"`
	// Cluster is the cluster's version resolution checked bundles against.
	Cluster *olm.Cluster `json:"cluster,omitempty"`
}

// operatorOutcome is what operator-controller decides for one Operator.
type operatorOutcome struct {
	Name    string `json:"name"`
	Package string `json:"package"`
	// Installed is the bundle the Operator's BundleDeployment installs.
	Installed *installedBundle `json:"installed,omitempty"`
	// Resolved is true when a bundle was chosen (status.resolvedBundle); Message says why not.
	Resolved bool           `json:"resolved"`
	Bundle   *bundleOutcome `json:"bundle,omitempty"`
	Message  string         `json:"message,omitempty"`
	// UpgradeAvailable (upgradePolicy Manual) is the bundle an approval would move to.
	UpgradeAvailable *bundleOutcome `json:"upgradeAvailable,omitempty"`
	// Waiting is the upgrade the semver guard rails hold back (a newer major, or minor in 0.x), and
	// why.
	Waiting *operators.Waiting `json:"waiting,omitempty"`
	// Skipped names the bundles of its package the cluster cannot run, and why.
	Skipped []string `json:"skipped,omitempty"`
}

type installedBundle struct {
	Bundle  string `json:"bundle,omitempty"`
	Version string `json:"version"`
}

type bundleOutcome struct {
	Name         string              `json:"name"`
	Version      string              `json:"version"`
	Catalog      string              `json:"catalog"`
	Image        string              `json:"image,omitempty"`
	Deprecation  []string            `json:"deprecation,omitempty"`
	Dependencies []dependencyOutcome `json:"dependencies,omitempty"`
	// Tie says that catalogs of the same priority offered this version and how the tie was broken.
	Tie string `json:"tie,omitempty"`
}

type dependencyOutcome struct {
	// Requirement is the bundle's property, e.g. "olm.gvk.required example.com/v1 Widget".
	Requirement string `json:"requirement"`
	Package     string `json:"package"`
	Bundle      string `json:"bundle"`
	Version     string `json:"version"`
	// Operator installs the package; "" when none does yet (dependencyPolicy Install creates one).
	Operator string `json:"operator,omitempty"`
}

// runResolveCluster is `deppy resolve --kubeconfig`: it reads the cluster as operator-controller
// does (package cluster) and resolves with operator-controller's code (package operators).
func runResolveCluster(ctx context.Context, o *resolveOptions, set map[string]bool, stdout io.Writer) error {
	for _, name := range []string{"catalog", "require", "installed", "upgrade-policy", "upgrade-scope"} {
		if set[name] {
			return usageError{fmt.Sprintf("--%s and --kubeconfig do not go together: with --kubeconfig the catalogs, requirements, installed bundles and policies come from the cluster (see deppy resolve --help)", name)}
		}
	}
	if o.kubeconfig == "" {
		return usageError{"--kubeconfig needs a file (see deppy resolve --help)"}
	}
	var sel labels.Selector
	if set["catalog-selector"] {
		s, err := labels.Parse(o.catalogSelector)
		if err != nil {
			return usageError{fmt.Sprintf("--catalog-selector %q is not a label selector: %v (examples: tier=prod, 'tier in (prod,staging)', '!test')", o.catalogSelector, err)}
		}
		sel = s
	}
	cfg, err := restConfig(o.kubeconfig, o.context)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	st, err := cluster.ReadState(ctx, dc)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Host, err)
	}
	st.Catalogs = cluster.SelectedCatalogs(st.Catalogs, sel)
	if st.Cluster, err = clusterFlags(o); err != nil {
		return err
	}
	if st.Cluster == nil {
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		if st.Cluster, err = cluster.ReadClusterVersion(ctx, disc, dc); err != nil {
			// operator-controller, too, resolves without the version it cannot read.
			fmt.Fprintf(os.Stderr, "warning: %s: %v: bundles' minKubeVersion is not checked\n", cfg.Host, err)
		}
	}
	cache := &cluster.Cache{Reader: &cluster.DynamicReader{Client: dc}}
	idx, names, err := cache.Index(ctx, st.Catalogs)
	if mismatch := (*cluster.ContentMismatchError)(nil); errors.As(err, &mismatch) {
		return fmt.Errorf("catalog %q: what CatalogMetadata serves is not the content its status names (read %s); catalogd may still be loading it: run deppy resolve again in a moment", mismatch.Catalog, mismatch.Read)
	}
	if err != nil {
		return fmt.Errorf("reading catalog content: %w", err)
	}
	out := clusterOutput{Catalogs: names, Operators: []operatorOutcome{}, Cluster: st.Cluster}
	if out.Catalogs == nil {
		out.Catalogs = []string{}
	}
	allResolved := true
	for _, d := range cluster.Decide(ctx, idx, st) {
		oo := operatorOutcome{Name: d.Operator, Package: d.Package, Message: d.Outcome.Message, Skipped: d.Outcome.Skipped}
		if d.Installed != nil {
			oo.Installed = &installedBundle{Bundle: d.Installed.BundleName, Version: d.Installed.Version}
		}
		if d.Outcome.Bundle != nil {
			oo.Resolved = true
			oo.Bundle = newBundleOutcome(d.Outcome.Bundle)
		} else if !d.Deleting {
			allResolved = false
		}
		if d.Outcome.UpgradeAvailable != nil {
			oo.UpgradeAvailable = newBundleOutcome(d.Outcome.UpgradeAvailable)
		}
		oo.Waiting = d.Outcome.Waiting
		out.Operators = append(out.Operators, oo)
	}
	if o.output == "text" {
		printClusterOutcomes(stdout, out)
	} else if err := printStructured(stdout, o.output, out); err != nil {
		return err
	}
	if !allResolved {
		return errNoSolution
	}
	return nil
}

// restConfig loads the kubeconfig file, with context as its current context when given.
func restConfig(path, context string) (*rest.Config, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := loader.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("--kubeconfig %s: no cluster is configured in it (is it a kubeconfig file?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	cfg.UserAgent = "deppy"
	// A catalog is read in pages; client-go's default of 5 requests per second would crawl.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

func newBundleOutcome(b *operators.Bundle) *bundleOutcome {
	out := &bundleOutcome{Name: b.Name, Version: b.Version, Catalog: b.Catalog, Image: b.Image, Tie: b.Tie()}
	for _, d := range []string{b.PackageDeprecation, b.ChannelDeprecation, b.BundleDeprecation} {
		if d != "" {
			out.Deprecation = append(out.Deprecation, d)
		}
	}
	for _, d := range b.Dependencies {
		out.Dependencies = append(out.Dependencies, dependencyOutcome{
			Requirement: d.Requirement, Package: d.Package, Bundle: d.Bundle, Version: d.Version, Operator: d.Operator,
		})
	}
	return out
}

// printClusterOutcomes prints one row per Operator, then why the failing ones failed, the upgrades
// awaiting approval and deprecations.
func printClusterOutcomes(w io.Writer, out clusterOutput) {
	if len(out.Operators) == 0 {
		fmt.Fprintln(w, "No Operators.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OPERATOR\tPACKAGE\tINSTALLED\tBUNDLE\tVERSION\tCATALOG\tDEPENDENCIES")
		for _, o := range out.Operators {
			installed := "-"
			if o.Installed != nil {
				installed = o.Installed.Version
			}
			bundle, version, catalog, deps := "(not resolved)", "-", "-", "-"
			if b := o.Bundle; b != nil {
				bundle, version, catalog = b.Name, b.Version, b.Catalog
				if len(b.Dependencies) > 0 {
					deps = dependencyList(b.Dependencies)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Name, o.Package, installed, bundle, version, catalog, deps)
		}
		tw.Flush()
	}
	var failed, upgrades, notes []string
	for _, o := range out.Operators {
		if !o.Resolved {
			failed = append(failed, fmt.Sprintf("  %s: %s", o.Name, o.Message))
		}
		if a := o.UpgradeAvailable; a != nil {
			upgrades = append(upgrades, fmt.Sprintf("  %s: version %s (bundle %s from catalog %q); approve it with: kubectl patch operator %s --type=merge -p '{\"spec\":{\"approvedVersion\":\"%s\"}}'",
				o.Name, a.Version, a.Name, a.Catalog, o.Name, a.Version))
		}
		if w := o.Waiting; w != nil {
			notes = append(notes, fmt.Sprintf("note: Operator %s: %s", o.Name, w.Message))
		}
		if o.Resolved {
			for _, s := range o.Skipped {
				notes = append(notes, fmt.Sprintf("note: Operator %s: %s", o.Name, s))
			}
		}
		if o.Bundle != nil && o.Bundle.Tie != "" {
			notes = append(notes, fmt.Sprintf("note: Operator %s: %s", o.Name, o.Bundle.Tie))
		}
		if o.Bundle != nil && len(o.Bundle.Deprecation) > 0 {
			notes = append(notes, fmt.Sprintf("warning: Operator %s: %s %s is deprecated: %s", o.Name, o.Bundle.Name, o.Bundle.Version, strings.Join(o.Bundle.Deprecation, "; ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "\nNot resolved (the installed bundle, if any, stays installed):")
		fmt.Fprintln(w, strings.Join(failed, "\n"))
	}
	if len(upgrades) > 0 {
		fmt.Fprintln(w, "\nUpgrades awaiting approval (upgradePolicy Manual):")
		fmt.Fprintln(w, strings.Join(upgrades, "\n"))
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintf(w, "\nServing catalogs: %s\n", orNone(out.Catalogs))
}

// dependencyList renders a bundle's dependencies as "pkg@version" each, naming the Operator that
// installs the package when it is not named after it, and marking those no Operator installs yet.
func dependencyList(deps []dependencyOutcome) string {
	parts := make([]string, 0, len(deps))
	seen := map[string]bool{}
	for _, d := range deps {
		s := d.Package + "@" + d.Version
		switch d.Operator {
		case "":
			s += " (no Operator yet)"
		case d.Package:
		default:
			s += " (Operator " + d.Operator + ")"
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
