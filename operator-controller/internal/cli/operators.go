package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// ownerNameLabel marks a namespace operator-controller created for an Operator (and removes with it).
const ownerNameLabel = "operators.operatorframework.io/owner-name"

// installFlags are the flags of install.
type installFlags struct {
	name, version, channel, namespace string
	upgradePolicy, constraintPolicy   string
	upgradeScope                      string
	catalogSelector, dependencyPolicy string
	watchNamespaces                   []string
	bundle, format                    string
	wait, dryRun                      bool
	timeout                           time.Duration
	pf                                previewFlags
}

func newInstallCommand(o *options) *cobra.Command {
	var inf installFlags
	cmd := &cobra.Command{
		Use:   "install PACKAGE | NAME --bundle IMAGE|GIT_URL",
		Short: "Install an operator: create an Operator and optionally wait until it is Installed and Healthy (users)",
		Long: `Create an Operator for PACKAGE (named PACKAGE unless --name is given). operator-controller resolves
it against the served catalogs and installs the bundle. With --wait, each change of its Resolved,
Installed and Healthy conditions is printed until it is Installed and Healthy. It stops at once with
exit code 1 when Installed is False with the BundleDeployment's failure reason (e.g. ObjectConflict:
an object of the bundle exists and OLM may not take it), printing the reason and message; on timeout
the failing condition is printed and the exit code is 1.

With --dry-run nothing is created: the plan is printed instead, computed with operator-controller's
and rukpak's own code against the live cluster: the bundles resolution would choose (with
--dependency-policy Install, the dependencies' bundles and the Operators created for them) and why,
every object that would be created (namespace, BundleDeployment, the bundle's objects as rukpak
renders them), the RBAC the operator would hold, and rukpak's CRD upgrade-safety findings. Bundle
images are pulled to render them. It exits 1 when resolution would fail.

With --bundle, NAME is the Operator's name and the bundle is installed directly (spec.source.type
Bundle), without a catalog and without resolution: an image reference, a git repository (a URL
ending in .git, ssh://, git://, file:// or git@host:path, optionally #branch=B, #tag=T or
#commit=C, then &dir=PATH for the bundle's directory; default branch main) or an http(s) URL of a
.tar.gz. --format says what it holds: RegistryV1 (default), Plain, Helm or Kustomize. The
dependencies such a bundle declares are not installed; upgrade it by changing the reference
(kubectl edit operator NAME). --version, --channel, --catalog-selector, --upgrade-policy,
--upgrade-constraint-policy, --upgrade-scope, --dependency-policy and --name are for catalog
installs. --bundle with --dry-run prints the Operator, namespace and BundleDeployment that would be
created and, for an image, the bundle's objects as rukpak renders them, their RBAC and CRD
upgrade-safety findings, and the package, version and dependencies the bundle declares, each
checked against the cluster (never installed for it); git and http sources are not fetched.

Upgrades happen by themselves only within the installed version's major version (in 0.x within its
minor version; never in 0.0.x): a newer major waits, shown by the UpgradeAvailable condition (reason
SemverGuardRail) and by kubectl olmv1 status, until spec.version includes it. --upgrade-scope
AnyVersion follows every upgrade the catalogs offer instead; a --version range is honoured as given.`,
		Example: `  kubectl olmv1 install cert-manager --wait
  kubectl olmv1 install my-operator --version ">=1.0.0 <2.0.0" --channel stable --namespace my-operator-system
  kubectl olmv1 install my-operator --version 1.2.0 --upgrade-policy Manual --catalog-selector tier=prod
  kubectl olmv1 install hyperconverged --dependency-policy Install --dry-run
  kubectl olmv1 install widget --bundle quay.io/org/widget-bundle:v1.0.0 --wait
  kubectl olmv1 install widget --bundle quay.io/org/widget-bundle:v1.0.0 --dry-run
  kubectl olmv1 install charts --bundle "https://github.com/org/charts.git#tag=v1.2.0&dir=widget" --format Helm`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := inf.operator(args[0])
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			if inf.dryRun {
				if inf.wait {
					return fmt.Errorf("--dry-run creates nothing to wait for: drop --wait")
				}
				return o.installDryRun(cmd.Context(), c, op, inf.pf)
			}
			return o.createOperator(cmd.Context(), c, op, inf.wait, inf.timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&inf.name, "name", "", "name of the Operator (default: the package name)")
	f.StringVar(&inf.version, "version", "", `version or semver range, e.g. 1.2.3 or ">=1.0.0 <2.0.0"`)
	f.StringVar(&inf.channel, "channel", "", "install from this channel only")
	f.StringVarP(&inf.namespace, "namespace", "n", "", "install namespace (default: the bundle's suggested namespace, else the package name)")
	f.StringSliceVar(&inf.watchNamespaces, "watch-namespace", nil, "namespaces the operator watches (repeatable; default: all)")
	f.StringVar(&inf.upgradePolicy, "upgrade-policy", "", "Automatic (default) or Manual (upgrades wait for `kubectl olmv1 approve`)")
	f.StringVar(&inf.constraintPolicy, "upgrade-constraint-policy", "", "Enforce (default: follow the catalog's upgrade edges) or Ignore")
	f.StringVar(&inf.upgradeScope, "upgrade-scope", "", "SemverCompatible (default: upgrade by itself only within the installed major version, in 0.x within its minor) or AnyVersion (follow every upgrade the catalogs offer)")
	f.StringVar(&inf.catalogSelector, "catalog-selector", "", "label selector of the Catalogs to install from, e.g. tier=prod")
	f.StringVar(&inf.dependencyPolicy, "dependency-policy", "", "Require (default: another Operator must install each dependency) or Install (operator-controller creates them)")
	f.BoolVar(&inf.wait, "wait", false, "wait until the Operator is Installed and Healthy")
	f.DurationVar(&inf.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	f.StringVar(&inf.bundle, "bundle", "", "install this bundle directly, without a catalog: an image reference, a git URL (#branch=, #tag=, #commit=, &dir=) or an http(s) URL")
	f.StringVar(&inf.format, "format", "", "with --bundle: RegistryV1 (default), Plain, Helm or Kustomize")
	f.BoolVar(&inf.dryRun, "dry-run", false, "print what would be installed (resolution, objects, RBAC, CRD upgrade safety) and create nothing")
	inf.pf.bind(f)
	return cmd
}

// operator is the Operator install creates for package pkg (named pkg unless --name is given).
func (f *installFlags) operator(pkg string) (*operatorsv1alpha1.Operator, error) {
	if f.bundle != "" || f.format != "" {
		return f.directOperator(pkg)
	}
	if f.name == "" {
		f.name = pkg
	}
	op := &operatorsv1alpha1.Operator{
		ObjectMeta: metav1.ObjectMeta{Name: f.name},
		Spec: operatorsv1alpha1.OperatorSpec{
			PackageName: pkg, Version: f.version, Channel: f.channel, InstallNamespace: f.namespace, WatchNamespaces: f.watchNamespaces,
			UpgradePolicy: operatorsv1alpha1.UpgradePolicy(f.upgradePolicy), UpgradeConstraintPolicy: operatorsv1alpha1.UpgradeConstraintPolicy(f.constraintPolicy),
			DependencyPolicy: operatorsv1alpha1.DependencyPolicy(f.dependencyPolicy), UpgradeScope: operatorsv1alpha1.UpgradeScope(f.upgradeScope),
		},
	}
	if f.catalogSelector != "" {
		sel, err := metav1.ParseToLabelSelector(f.catalogSelector)
		if err != nil {
			return nil, fmt.Errorf("--catalog-selector: %w", err)
		}
		op.Spec.CatalogSelector = sel
	}
	return op, nil
}

// createOperator creates op, with wait waits until it is Installed and Healthy, and prints it.
func (o *options) createOperator(ctx context.Context, c client.Client, op *operatorsv1alpha1.Operator, wait bool, timeout time.Duration) error {
	name := op.Name
	if err := c.Create(ctx, op); err != nil {
		return fmt.Errorf("create Operator %s: %w", name, err)
	}
	if op.Spec.IsDirect() {
		fmt.Fprintf(o.ErrOut, "operator %s created (bundle %s, installed directly)\n", name, directSourceName(op))
	} else {
		fmt.Fprintf(o.ErrOut, "operator %s created (package %s)\n", name, op.Spec.PackageName)
	}
	if wait {
		var err error
		if op, err = o.waitInstalled(ctx, c, name, timeout, ""); err != nil {
			return err
		}
	}
	op.ManagedFields = nil
	return o.Print(op, func() *output.Table { return operatorTable([]operatorsv1alpha1.Operator{*op}) })
}

// waitInstalled prints the Operator's condition changes until it is Installed and Healthy for its
// current generation (and, when version is set, has that version installed). A paused Operator
// (Paused=True for its current generation) that is not there yet stops the wait with an error:
// nothing changes until it is resumed.
func (o *options) waitInstalled(ctx context.Context, c client.Client, name string, timeout time.Duration, version string) (*operatorsv1alpha1.Operator, error) {
	op := &operatorsv1alpha1.Operator{}
	last := ""
	var unresolvedSince time.Time
	err := o.poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, op); err != nil {
			return false, "", err
		}
		line := fmt.Sprintf("operator %s: %s", name, conditionsLine(op))
		if line != last {
			fmt.Fprintln(o.ErrOut, line)
			last = line
		}
		if err := installFailure(op); err != nil {
			return false, "", err
		}
		if err := resolutionFailure(op, &unresolvedSince, time.Now()); err != nil {
			return false, "", err
		}
		g := op.Generation
		done := conditionStatus(op.Status.Conditions, operatorsv1alpha1.TypeInstalled, g) == "True" &&
			conditionStatus(op.Status.Conditions, operatorsv1alpha1.TypeHealthy, g) == "True" &&
			op.Status.InstalledBundle != nil && (version == "" || op.Status.InstalledBundle.Version == version)
		if p := currentCondition(op.Status.Conditions, operatorsv1alpha1.TypePaused, g); !done && p != nil && p.Status == metav1.ConditionTrue {
			return false, "", fmt.Errorf("paused (spec.paused), so it stays on what it has installed until it is resumed: %s; resume it with `kubectl olmv1 resume %s --wait`", p.Message, name)
		}
		return done, failing(op), nil
	})
	if err != nil {
		return nil, fmt.Errorf("operator %s: %w", name, err)
	}
	if ib := op.Status.InstalledBundle; ib.Name == "" { // a direct bundle: known by its source only
		fmt.Fprintf(o.ErrOut, "operator %s: installed the bundle at %s in namespace %s\n", name, ib.Source, op.Status.InstallNamespace)
	} else {
		fmt.Fprintf(o.ErrOut, "operator %s: installed %s %s in namespace %s\n", name, ib.Name, ib.Version, op.Status.InstallNamespace)
	}
	return op, nil
}

// installFailure is an error when the Operator's Installed condition is False for its current
// generation with a reason that needs a person: the BundleDeployment's own reason (ObjectConflict,
// InstallFailed, UpgradeFailed, UnpackFailed, InvalidBundle, ...). InstallationPending and
// ProgressionProbeWaiting (a phase waits on a progression probe) are waiting, and InstallationFailed
// is an error of operator-controller's own writes, which it retries: none of them stops the wait.
func installFailure(op *operatorsv1alpha1.Operator) error {
	c := meta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeInstalled)
	if c == nil || c.ObservedGeneration != op.Generation || c.Status != metav1.ConditionFalse {
		return nil
	}
	switch c.Reason {
	case operatorsv1alpha1.ReasonInstallationPending, operatorsv1alpha1.ReasonInstallationFailed, operatorsv1alpha1.ReasonProgressionProbeWaiting:
		return nil
	}
	return fmt.Errorf("not installed: Installed=False reason %s: %s (see kubectl get operator %s -o yaml)", c.Reason, c.Message, op.Name)
}

// resolutionGrace is how long Resolved=False must last before --wait gives up: a catalog that is
// still being unpacked, or an Operator created a moment before the one it depends on, resolves a
// moment later; a package that does not exist does not.
const resolutionGrace = 3 * time.Second

// resolutionFailure is an error when the Operator's Resolved condition has been False for its
// current generation for resolutionGrace (since is when it was first seen False; zero when it is not).
func resolutionFailure(op *operatorsv1alpha1.Operator, since *time.Time, now time.Time) error {
	c := meta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeResolved)
	if c == nil || c.ObservedGeneration != op.Generation || c.Status != metav1.ConditionFalse {
		*since = time.Time{}
		return nil
	}
	if since.IsZero() {
		*since = now
	}
	if now.Sub(*since) < resolutionGrace {
		return nil
	}
	return fmt.Errorf("not installed: Resolved=False reason %s: %s (see kubectl get operator %s -o yaml)", c.Reason, c.Message, op.Name)
}
