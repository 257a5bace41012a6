package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

type resolveOptions struct {
	catalogs  stringList
	requires  stringList
	installed stringList
	policy    string
	// scope is --upgrade-scope: SemverCompatible (the semver guard rails) or AnyVersion.
	scope  string
	output outputFormat
	// clusterVersion is --cluster-version: the Kubernetes version bundles must run on.
	clusterVersion string
	// openShiftVersion is --openshift-version: the OpenShift version (olm.maxOpenShiftVersion).
	openShiftVersion string

	// From a cluster (cluster.go).
	kubeconfig      string
	context         string
	catalogSelector string
}

func resolveFlags(o *resolveOptions) *flag.FlagSet {
	o.output = "text"
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	fs.Var(&o.catalogs, "catalog", "file-based catalog directory, as `[NAME[:PRIORITY]=]DIR` (repeatable; NAME defaults to the directory name, PRIORITY to 0, higher wins ties)")
	fs.Var(&o.requires, "require", "package to install, as `PKG[@RANGE][#CHANNEL]` (repeatable); RANGE is a semver range like \">=1.2 <2\" or an exact version; without CHANNEL the package's default channel is preferred")
	fs.Var(&o.installed, "installed", "package already installed, as `PKG@VERSION` or PKG@VERSION=BUNDLE (repeatable)")
	fs.StringVar(&o.policy, "upgrade-policy", "Enforce", "Enforce: installed packages only move along the catalogs' upgrade edges (replaces, skips, skipRange); Ignore: any version, downgrades included")
	fs.StringVar(&o.scope, "upgrade-scope", "SemverCompatible", "SemverCompatible: a --require'd package that is --installed, without a RANGE, upgrades only within the installed major version (0.x: its minor; 0.0.x: not at all), as operator-controller's Operators do; a newer one is printed as waiting. AnyVersion: follow every upgrade the catalogs offer")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "read the Operators, their BundleDeployments and the serving Catalogs' content from the cluster of this kubeconfig `file`, and print what operator-controller decides for every Operator (instead of --catalog, --require, --installed)")
	fs.StringVar(&o.context, "context", "", "with --kubeconfig: the kubeconfig `context` to use (default: its current context)")
	fs.StringVar(&o.catalogSelector, "catalog-selector", "", "with --kubeconfig: read only the Catalogs this label `selector` matches (e.g. tier=prod), as if the others were not serving")
	fs.StringVar(&o.clusterVersion, "cluster-version", "", "skip the bundles a cluster of this Kubernetes `version` (e.g. 1.37.2) cannot run (minKubeVersion); with --kubeconfig, instead of the cluster's own version: what would resolve after a cluster upgrade")
	fs.StringVar(&o.openShiftVersion, "openshift-version", "", "skip the bundles whose olm.maxOpenShiftVersion is below this OpenShift `version` (e.g. 4.17); with --kubeconfig, instead of the cluster's own")
	fs.Var(&o.output, "o", "output `format`: text, yaml or json")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: deppy resolve --catalog DIR --require PKG[@RANGE][#CHANNEL] [flags]
       deppy resolve --kubeconfig FILE [--context NAME] [--catalog-selector SELECTOR] [-o text|yaml|json]

Chooses one bundle per required package from file-based catalogs, together
with the dependencies they need (olm.package.required, olm.gvk.required,
olm.constraint), so that no package has two bundles and no API is provided
twice. Installed packages stay installed and, under --upgrade-policy Enforce,
only move along the catalogs' upgrade edges. A --require'd package that is
--installed and has no RANGE upgrades only within its installed major version
(0.x: its minor; 0.0.x: not at all), as operator-controller's Operators do; a
newer version is printed as a note saying it waits (--upgrade-scope AnyVersion
follows every upgrade instead). All requirements are solved together.

Preference: non-deprecated bundles first; then, for a --require without
#CHANNEL and for every dependency, the bundles of the package's default
channel (OLM v0's rule, and operator-controller's: both call the same code);
then the highest version; then the catalog with the highest priority. So a
higher version, even a pre-release, in another channel does not beat the
default channel's head; another channel is used only when the default one
has nothing that fits (a range, an upgrade edge). #CHANNEL restricts a
requirement to that channel.

With --kubeconfig the inputs come from a running cluster, read as
operator-controller reads them: every Operator (its package, version range,
channel, catalogSelector and policies), the bundle its BundleDeployment
installs, and the content of every serving Catalog through the
CatalogMetadata API. All Operators are resolved together by
operator-controller's own code, and the bundle it would install for each
one (with the packages satisfying its dependencies), or why there is none,
is printed. Exit status 1 when an Operator cannot be resolved.

With --cluster-version (or --kubeconfig, which reads the cluster's version
from discovery) a bundle whose minKubeVersion (CSV) or olm.minKubeVersion is
above that version is not a candidate, nor, with --openshift-version (or on
OpenShift), one whose olm.maxOpenShiftVersion is below the OpenShift
version; every skipped bundle is listed with the reason. An installed bundle
is never skipped.

Examples:
  # newest bundle of the default channel, with the dependencies it pulls in
  deppy resolve --catalog ./community-v4.20 --require rabbitmq-messaging-topology-operator

  # the default channel's head (stable), not a newer bundle of another channel
  deppy resolve --catalog ./community-v4.20 --require sailoperator

  # a channel of your choice, e.g. a nightly one
  deppy resolve --catalog ./community-v4.20 --require 'sailoperator#1.31-nightly'

  # pin a range and a channel, from two ranked catalogs
  deppy resolve --catalog prod:10=./catalogs/prod --catalog community=./catalogs/community \
      --require 'rabbitmq-messaging-topology-operator@>=1.15 <2#stable'

  # what may an installed operator upgrade to? (within 0.5.x; a newer minor is a note)
  deppy resolve --catalog ./community-v4.20 --require kube-green --installed kube-green@0.5.0

  # the same following every upgrade edge the catalog offers
  deppy resolve --catalog ./community-v4.20 --require kube-green --installed kube-green@0.5.0 --upgrade-scope AnyVersion

  # allow downgrades and jumps off the upgrade graph, print YAML
  deppy resolve --catalog ./community-v4.20 --require kube-green@0.4.0 \
      --installed kube-green@0.5.0 --upgrade-policy Ignore -o yaml

  # only bundles a Kubernetes 1.29 cluster can run
  deppy resolve --catalog ./community-v4.20 --require rabbitmq-cluster-operator --cluster-version 1.29.0

  # what operator-controller decides for every Operator of a cluster
  deppy resolve --kubeconfig ~/.kube/config

  # the same with only the catalogs labelled tier=prod, another context, as JSON
  deppy resolve --kubeconfig ~/.kube/config --context staging --catalog-selector tier=prod -o json

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// resolveOutput is what `deppy resolve -o yaml|json` prints.
type resolveOutput struct {
	Resolved    bool            `json:"resolved"`
	Selections  []olm.Selection `json:"selections,omitempty"`
	Explanation *explanation    `json:"explanation,omitempty"`
	// Skipped names the bundles the cluster cannot run (--cluster-version) and why.
	Skipped []string `json:"skipped,omitempty"`
	// Waiting names the upgrades the semver guard rails hold back (--upgrade-scope) and why.
	Waiting []string `json:"waiting,omitempty"`
}

// runResolve is `deppy resolve`: it resolves the requirements of the flags against file-based
// catalogs, or, with --kubeconfig, every Operator of a cluster (runResolveCluster).
func runResolve(ctx context.Context, args []string, stdout io.Writer) error {
	var o resolveOptions
	set, help, err := parseResolveArgs(&o, args, stdout)
	if err != nil || help {
		return err
	}
	if o.kubeconfig != "" || set["kubeconfig"] {
		return runResolveCluster(ctx, &o, set, stdout)
	}
	for _, name := range []string{"context", "catalog-selector"} {
		if set[name] {
			return usageError{fmt.Sprintf("--%s needs --kubeconfig (see deppy resolve --help)", name)}
		}
	}
	if len(o.catalogs) == 0 || len(o.requires) == 0 {
		return usageError{"want at least one --catalog and one --require (see deppy resolve --help)"}
	}
	p, err := resolveProblem(&o)
	if err != nil {
		return err
	}
	if p.Cluster, err = clusterFlags(&o); err != nil {
		return err
	}
	idx, err := loadCatalogIndex(ctx, o.catalogs)
	if err != nil {
		return err
	}
	var guard *operators.GuardRails
	switch o.scope {
	case "SemverCompatible":
		guard = operators.ProblemGuardRails(p)
	case "AnyVersion":
	default:
		return usageError{fmt.Sprintf("invalid --upgrade-scope %q: want SemverCompatible or AnyVersion", o.scope)}
	}
	out, err := resolveToOutput(ctx, idx, p, guard)
	if err != nil {
		return err
	}
	if err := printResolveOutput(stdout, o.output, out); err != nil {
		return err
	}
	if !out.Resolved {
		return errNoSolution
	}
	return nil
}

// parseResolveArgs parses the flags of `deppy resolve` into o and returns the names of those set.
// For --help it prints the usage to stdout and reports help.
func parseResolveArgs(o *resolveOptions, args []string, stdout io.Writer) (set map[string]bool, help bool, err error) {
	fs := resolveFlags(o)
	fs.SetOutput(io.Discard) // errors are returned, help goes to stdout
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, true, nil
		}
		return nil, false, usageError{err.Error() + " (see deppy resolve --help)"}
	}
	if fs.NArg() > 0 {
		return nil, false, usageError{fmt.Sprintf("unexpected argument %q (flags only; see deppy resolve --help)", fs.Arg(0))}
	}
	set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set, false, nil
}

// resolveProblem is the problem the flags describe: the --require requirements and the
// --installed bundles, all under the --upgrade-policy.
func resolveProblem(o *resolveOptions) (olm.Problem, error) {
	var p olm.Problem
	policy, err := olm.ParseUpgradePolicy(o.policy)
	if err != nil {
		return p, usageError{err.Error()}
	}
	for _, s := range o.requires {
		r, err := olm.ParseRequirement(s)
		if err != nil {
			return p, usageError{err.Error()}
		}
		r.UpgradePolicy = policy
		p.Requirements = append(p.Requirements, r)
	}
	for _, s := range o.installed {
		ib, err := olm.ParseInstalled(s)
		if err != nil {
			return p, usageError{err.Error()}
		}
		ib.UpgradePolicy = policy
		p.Installed = append(p.Installed, ib)
	}
	return p, nil
}

// loadCatalogIndex loads the catalog directories of the --catalog flags (flags) into one index.
func loadCatalogIndex(ctx context.Context, flags []string) (*olm.Index, error) {
	var catalogs []*olm.Catalog
	for _, s := range flags {
		name, priority, dir, err := parseCatalogFlag(s)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		c, err := olm.LoadCatalogDir(ctx, name, priority, dir)
		if err != nil {
			return nil, err
		}
		catalogs = append(catalogs, c)
	}
	return olm.NewIndex(catalogs...)
}

// resolveToOutput resolves p against idx, with the semver guard rails guard unless it is nil: the
// selections, or the explanation of why there is no solution, and the upgrades that wait. Other
// errors are returned.
func resolveToOutput(ctx context.Context, idx *olm.Index, p olm.Problem, guard *operators.GuardRails) (resolveOutput, error) {
	r := &olm.Resolver{Index: idx}
	if guard != nil {
		r.Customize = guard.Customize
	}
	res, err := r.Resolve(ctx, p)
	out := resolveOutput{}
	for _, rq := range p.Requirements {
		if w := guard.Waiting(rq.Package); w != nil {
			out.Waiting = append(out.Waiting, fmt.Sprintf("package %q: %s", rq.Package, w.Message))
		}
	}
	if err != nil {
		ns := asNotSatisfiable(err)
		if ns == nil {
			return out, err
		}
		out.Explanation = explain(ns)
	} else {
		out.Resolved = true
		out.Selections = res.Selections
		out.Skipped = res.Skipped
	}
	return out, nil
}

// printResolveOutput prints out in format: a table or an explanation for text, else YAML or JSON.
func printResolveOutput(w io.Writer, format outputFormat, out resolveOutput) error {
	if format == "text" {
		if out.Resolved {
			printSelections(w, out.Selections)
		} else {
			printExplanationText(w, out.Explanation)
		}
		for _, s := range append(append([]string(nil), out.Skipped...), out.Waiting...) {
			fmt.Fprintln(w, "note: "+s)
		}
		return nil
	}
	return printStructured(w, format, out)
}

// parseCatalogFlag reads [NAME[:PRIORITY]=]DIR.
func parseCatalogFlag(s string) (name string, priority int, dir string, err error) {
	head, tail, ok := strings.Cut(s, "=")
	if !ok {
		return "", 0, s, nil
	}
	dir = tail
	name = head
	if n, p, ok := strings.Cut(head, ":"); ok {
		name = n
		if priority, err = strconv.Atoi(p); err != nil {
			return "", 0, "", fmt.Errorf("--catalog %q: priority %q is not an integer", s, p)
		}
	}
	if name == "" || dir == "" {
		return "", 0, "", fmt.Errorf("--catalog %q: want [NAME[:PRIORITY]=]DIR", s)
	}
	return name, priority, dir, nil
}
