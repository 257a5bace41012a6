package controller

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/paused"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// observations is what one reconcile learned; setStatus turns it into the Operator's status. The
// status is output only: the only reads of it are the previous conditions (transition times, the
// Paused condition's "since", and keeping Deprecated and UpgradeAvailable when nothing resolved).
// What is installed comes from the BundleDeployment (installedBy), never from
// status.installedBundle.
type observations struct {
	// resolveErr is set when resolution could not run (e.g. a catalog could not be read): a
	// Resolved failure.
	resolveErr *step.Error
	// outcome is the resolution result for this Operator (nil when resolution could not run).
	outcome *operators.Outcome
	// catalogs are the Catalogs the resolution read (nil when it could not run): the resolved
	// bundle's catalog among them says which signature policy (bundleVerify) it is installed with.
	catalogs []catalogdv1alpha1.Catalog
	// packageBundles are the bundles of the Operator's package in the index the resolution read
	// (nil when it could not run): where installedBy looks up the installed image.
	packageBundles []*olm.Bundle
	// bd is the Operator's BundleDeployment after this reconcile (nil when there is none).
	bd *rukpakv1alpha1.BundleDeployment
	// applyErr is set when the namespace, the BundleDeployment or the dependencies could not be
	// written: an Installed failure.
	applyErr *step.Error
	// namespace is the install namespace chosen.
	namespace string
	// dependencies are the packages satisfying the resolved bundle's dependencies (nil when the
	// BundleDeployment could not be written: the previous list is kept).
	dependencies []operatorsv1alpha1.Dependency
	// pausedBeforeInstall is set when the Operator is paused and nothing is installed yet.
	pausedBeforeInstall bool
	// direct is set when the Operator installs a bundle directly (spec.source.type Bundle): no
	// resolution ran, and what is installed is named by its source.
	direct bool
	// directReport is what the installed direct bundle's content declares (nil when it was not
	// read: another format, nothing installed, no reader).
	directReport *directReport
	// held is set when the installed bundle's OperatorCondition says Upgradeable=False and the
	// resolved upgrade is therefore not installed (holdUpgrade).
	held *heldUpgrade
	// settingsApplied names the settings (spec.config, spec.paused, ...) this reconcile applied to
	// the installed BundleDeployment while nothing resolved (ensureSettings).
	settingsApplied []string
}

// err is the failure Reconcile returns (through step.Result): resolution's, which says when to look
// again, before the install's. Nil when no step failed.
func (obs observations) err() error {
	switch {
	case obs.resolveErr != nil:
		return obs.resolveErr
	case obs.applyErr != nil:
		return obs.applyErr
	}
	return nil
}

// conditionEvents says which condition transitions are Warnings: a False Paused, Deprecated or
// UpgradeAvailable is the normal state, and a pending resolution or installation is progress, not a
// failure; a deprecation is a Warning although it is Deprecated=True.
var conditionEvents = conditionevents.Policy{
	NotFailures: []string{operatorsv1alpha1.TypePaused, operatorsv1alpha1.TypeDeprecated, operatorsv1alpha1.TypeUpgradeAvailable},
	Progressing: []string{operatorsv1alpha1.ReasonResolutionPending, operatorsv1alpha1.ReasonInstallationPending},
	Warnings:    []string{operatorsv1alpha1.ReasonPackageDeprecated, operatorsv1alpha1.ReasonChannelDeprecated, operatorsv1alpha1.ReasonBundleDeprecated},
}

// setStatus computes every condition of op from obs, in one place.
func setStatus(op *operatorsv1alpha1.Operator, obs observations) {
	gen := op.Generation
	// SetStatusCondition keeps a condition's lastTransitionTime while its status does not change.
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		apimeta.SetStatusCondition(&op.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	op.Status.ObservedGeneration = gen
	if obs.namespace != "" {
		op.Status.InstallNamespace = obs.namespace
	}
	installed := installedBy(obs.bd, obs.packageBundles)
	if !obs.direct {
		op.Status.DeclaredDependencies = nil // only direct bundles declare them in status
	}
	if obs.direct {
		installed = withFacts(installedDirect(obs.bd), obs.directReport)
	}

	// Resolved.
	var bundle *operators.Bundle
	switch {
	case obs.direct:
		setDirectResolved(op, obs, set)
		setPaused(op)
		setInstalled(op, obs, installed, set)
		setHealthy(op, obs.bd, set)
		return
	case obs.resolveErr != nil:
		set(operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, obs.resolveErr.Reason, obs.resolveErr.Error()+installed.staysInstalled()+withoutResolution(obs))
	case obs.outcome == nil:
		set(operatorsv1alpha1.TypeResolved, metav1.ConditionUnknown, operatorsv1alpha1.ReasonResolutionPending, "resolution has not run yet")
	case obs.outcome.Bundle == nil:
		set(operatorsv1alpha1.TypeResolved, metav1.ConditionFalse, operatorsv1alpha1.ReasonResolutionFailed, obs.outcome.Message+installed.staysInstalled()+withoutResolution(obs))
	default:
		bundle = obs.outcome.Bundle
		op.Status.ResolvedBundle = bundleMetadata(bundleAnnotations(bundle), bundle.Image)
		if obs.held == nil && (obs.applyErr == nil || obs.dependencies != nil) {
			op.Status.Dependencies = obs.dependencies
		}
		msg := fmt.Sprintf("resolved to bundle %s (version %s) from catalog %q", bundle.Name, bundle.Version, bundle.Catalog)
		if tie := bundle.Tie(); tie != "" {
			msg += "; " + tie
		}
		msg += skippedNote(obs.outcome.Skipped)
		if obs.held != nil {
			msg += fmt.Sprintf("; not installed: OperatorCondition %s/%s holds the upgrade (see UpgradeAvailable)", obs.held.namespace, obs.held.name)
		}
		set(operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded, msg)
	}

	setPaused(op)
	setInstalled(op, obs, installed, set)
	setHealthy(op, obs.bd, set)
	setDeprecated(op, bundle, set)
	if obs.held != nil {
		set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeBlocked, obs.held.message())
		return
	}
	setUpgradeAvailable(op, obs.outcome, installed, set)
}

// maxSkippedInMessage bounds the skipped bundles a Resolved=True message names.
const maxSkippedInMessage = 3

// skippedNote is the end of a Resolved=True message naming the newer bundles the cluster cannot
// run (the first maxSkippedInMessage, in preference order), "" when none was skipped.
func skippedNote(skipped []string) string {
	if len(skipped) == 0 {
		return ""
	}
	listed := skipped
	if len(listed) > maxSkippedInMessage {
		listed = listed[:maxSkippedInMessage]
	}
	msg := "; " + strings.Join(listed, "; ")
	if more := len(skipped) - len(listed); more > 0 {
		msg += fmt.Sprintf("; and %d more bundles the cluster cannot run", more)
	}
	return msg
}

// withoutResolution is the part of a Resolved=False message that says what still reaches the
// installed bundle ("" when nothing is installed): the settings that need no resolution, and
// those this reconcile applied.
func withoutResolution(obs observations) string {
	if obs.bd == nil {
		return ""
	}
	msg := "; resolution is unavailable, but changes to spec.config, spec.watchNamespaces, the policies, spec.paused and spec.progressionProbes still apply to the installed bundle"
	if len(obs.settingsApplied) > 0 {
		msg += " (applied " + strings.Join(obs.settingsApplied, ", ") + " to BundleDeployment " + obs.bd.Name + " without resolution)"
	} else if obs.applyErr == nil {
		msg += " (BundleDeployment " + obs.bd.Name + " has the current ones)"
	}
	return msg
}

type setFunc func(t string, s metav1.ConditionStatus, reason, msg string)

// bdCondition returns the BundleDeployment's condition of type t when it describes the current
// generation of the BundleDeployment.
func bdCondition(bd *rukpakv1alpha1.BundleDeployment, t string) *metav1.Condition {
	if bd == nil {
		return nil
	}
	c := apimeta.FindStatusCondition(bd.Status.Conditions, t)
	if c == nil || c.ObservedGeneration != bd.Generation {
		return nil
	}
	return c
}

// setInstalled reports the BundleDeployment's installation and writes status.installedBundle from
// what it has installed (left as it is only while the BundleDeployment's status does not say what
// that is). Whenever the BundleDeployment fails for its current generation, Installed=False carries
// the BundleDeployment's own reason and message: Installed=False from rukpak (ObjectConflict,
// InstallFailed, UpgradeFailed, ...) first, then Unpacked=False (UnpackFailed, InvalidBundle,
// UnsupportedInstallMode, ...). InstallationPending is kept for states that are only waiting.
func setInstalled(op *operatorsv1alpha1.Operator, obs observations, installed installation, set setFunc) {
	bd := obs.bd
	if installed.state != installedUnknown {
		op.Status.InstalledBundle = installed.bundle
	}
	switch {
	case obs.applyErr != nil:
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, obs.applyErr.Reason, obs.applyErr.Error())
		return
	case bd == nil && obs.pausedBeforeInstall:
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, operatorsv1alpha1.ReasonInstallationPending,
			"the Operator is paused (spec.paused) and nothing is installed yet: nothing is installed until it is resumed")
		return
	case bd == nil:
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, operatorsv1alpha1.ReasonInstallationPending, "no bundle is installed yet (see the Resolved condition)")
		return
	}
	installedCond, unpacked := bdCondition(bd, rukpakv1alpha1.TypeInstalled), bdCondition(bd, rukpakv1alpha1.TypeUnpacked)
	switch {
	case installedCond != nil && installedCond.Status == metav1.ConditionTrue:
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded,
			fmt.Sprintf("%s is installed in namespace %q by BundleDeployment %q", bundleLabel(bd, true), bd.Spec.InstallNamespace, bd.Name))
	case failed(installedCond, rukpakv1alpha1.ReasonInstallPending):
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, installedCond.Reason, bdFailure(bd, installed, installedCond))
	case failed(unpacked, rukpakv1alpha1.ReasonUnpackPending):
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, unpacked.Reason, bdFailure(bd, installed, unpacked))
	case installedCond == nil:
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionUnknown, operatorsv1alpha1.ReasonInstallationStatusUnknown,
			fmt.Sprintf("waiting for BundleDeployment %q to report on %s", bd.Name, bundleLabel(bd, false)))
	default:
		set(operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, operatorsv1alpha1.ReasonInstallationPending,
			fmt.Sprintf("BundleDeployment %q: %s", bd.Name, installedCond.Message))
	}
}

// failed reports whether c is False with a reason other than pending (c may be nil).
func failed(c *metav1.Condition, pending string) bool {
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason != pending && c.Reason != ""
}

// bdFailure is the Installed message for a failing BundleDeployment condition c: its message, and
// which bundle stays installed when an upgrade failed (installed is not the bundle bd names). What
// rukpak could not say (installedUnknown) is left to its own message ("revision 1 stays installed").
func bdFailure(bd *rukpakv1alpha1.BundleDeployment, installed installation, c *metav1.Condition) string {
	msg := fmt.Sprintf("BundleDeployment %q: %s", bd.Name, c.Message)
	if installed.state != installedUnknown && !installed.is(bd.Annotations[AnnotationBundleName]) {
		msg += installed.staysInstalled()
	}
	return msg
}

func setHealthy(op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment, set setFunc) {
	c := bdCondition(bd, rukpakv1alpha1.TypeHealthy)
	switch {
	case bd == nil:
		set(operatorsv1alpha1.TypeHealthy, metav1.ConditionUnknown, operatorsv1alpha1.ReasonHealthUnknown, "nothing is installed")
	case c == nil:
		set(operatorsv1alpha1.TypeHealthy, metav1.ConditionUnknown, operatorsv1alpha1.ReasonHealthUnknown,
			fmt.Sprintf("BundleDeployment %q has not reported health yet", bd.Name))
	case c.Status == metav1.ConditionTrue:
		set(operatorsv1alpha1.TypeHealthy, metav1.ConditionTrue, operatorsv1alpha1.ReasonHealthy, c.Message)
	case c.Status == metav1.ConditionFalse && (c.Reason == operatorsv1alpha1.ReasonProgressDeadlineExceeded || c.Reason == operatorsv1alpha1.ReasonRollbackBlocked ||
		c.Reason == operatorsv1alpha1.ReasonProgressionProbeWaiting):
		set(operatorsv1alpha1.TypeHealthy, metav1.ConditionFalse, c.Reason, c.Message)
	case c.Status == metav1.ConditionFalse:
		set(operatorsv1alpha1.TypeHealthy, metav1.ConditionFalse, operatorsv1alpha1.ReasonUnhealthy, c.Message)
	default:
		set(operatorsv1alpha1.TypeHealthy, metav1.ConditionUnknown, operatorsv1alpha1.ReasonHealthUnknown, c.Message)
	}
}

// setDeprecated reports the catalog's deprecations of the resolved bundle. When nothing resolved the
// previous condition is kept.
func setDeprecated(op *operatorsv1alpha1.Operator, b *operators.Bundle, set setFunc) {
	if b == nil {
		// Status read: the previous Deprecated condition is kept while nothing resolves.
		if apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeDeprecated) == nil {
			set(operatorsv1alpha1.TypeDeprecated, metav1.ConditionFalse, operatorsv1alpha1.ReasonNotDeprecated, "no bundle is resolved")
		}
		return
	}
	var reasons, msgs []string
	if b.PackageDeprecation != "" {
		reasons = append(reasons, operatorsv1alpha1.ReasonPackageDeprecated)
		msgs = append(msgs, fmt.Sprintf("package %q is deprecated: %s", b.Package, b.PackageDeprecation))
	}
	if b.ChannelDeprecation != "" {
		reasons = append(reasons, operatorsv1alpha1.ReasonChannelDeprecated)
		msgs = append(msgs, fmt.Sprintf("channel %q is deprecated: %s", b.Channel, b.ChannelDeprecation))
	}
	if b.BundleDeprecation != "" {
		reasons = append(reasons, operatorsv1alpha1.ReasonBundleDeprecated)
		msgs = append(msgs, fmt.Sprintf("bundle %s is deprecated: %s", b.Name, b.BundleDeprecation))
	}
	if len(reasons) == 0 {
		set(operatorsv1alpha1.TypeDeprecated, metav1.ConditionFalse, operatorsv1alpha1.ReasonNotDeprecated,
			fmt.Sprintf("neither package %q, its channel nor bundle %s is deprecated", b.Package, b.Name))
		return
	}
	// The reason names the broadest deprecation; the message lists all of them.
	set(operatorsv1alpha1.TypeDeprecated, metav1.ConditionTrue, reasons[0], strings.Join(msgs, "; "))
}

// setUpgradeAvailable reports an upgrade that waits: for approval (upgradePolicy Manual: awaiting
// it, or approved and being installed, as long as installed is not known to be at the resolved
// version), or because the semver guard rails hold it back (spec.upgradeScope SemverCompatible); or
// none.
func setUpgradeAvailable(op *operatorsv1alpha1.Operator, o *operators.Outcome, installed installation, set setFunc) {
	var waiting *operators.Waiting
	if o != nil {
		waiting = o.Waiting
	}
	if op.Spec.UpgradePolicy != operatorsv1alpha1.UpgradePolicyManual {
		if waiting != nil {
			set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonSemverGuardRail, waitingMessage(waiting))
			return
		}
		set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate,
			"upgradePolicy is Automatic: upgrades within the installed version's semver-compatible range (spec.upgradeScope) are installed as soon as they resolve")
		return
	}
	switch {
	case o != nil && o.UpgradeAvailable != nil:
		a := o.UpgradeAvailable
		msg := fmt.Sprintf("version %s (bundle %s from catalog %q) is available; approve it with: kubectl patch operator %s --type=merge -p '{\"spec\":{\"approvedVersion\":\"%s\"}}'",
			a.Version, a.Name, a.Catalog, op.Name, a.Version)
		if waiting != nil {
			msg += ". Also: " + waitingMessage(waiting)
		}
		set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeAwaitingApproval, msg)
	case o != nil && o.Bundle != nil && op.Spec.ApprovedVersion != "" && installed.something() && !installed.hasVersion(o.Bundle.Version):
		set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonUpgradeApproved,
			fmt.Sprintf("version %s is approved and being installed", o.Bundle.Version))
	case waiting != nil:
		set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionTrue, operatorsv1alpha1.ReasonSemverGuardRail, waitingMessage(waiting))
	case o != nil && o.Bundle != nil:
		set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate,
			fmt.Sprintf("version %s is the best resolvable version", o.Bundle.Version))
	default:
		// Status read: the previous UpgradeAvailable condition is kept while nothing resolves.
		if apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeUpgradeAvailable) == nil {
			set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate, "no bundle is resolved")
		}
	}
}

// waitingMessage is the UpgradeAvailable message of an upgrade the semver guard rails hold back:
// resolution's sentence (the version, why it waits, how to take it) and the bundle.
func waitingMessage(w *operators.Waiting) string {
	return fmt.Sprintf("%s; bundle %s from catalog %q", w.Message, w.Name, w.Catalog)
}

// setPaused reports spec.paused. The condition's lastTransitionTime says since when.
func setPaused(op *operatorsv1alpha1.Operator) {
	// Status read: the Paused condition's lastTransitionTime is when the pause began.
	paused.SetCondition(&op.Status.Conditions, op.Generation, op.Spec.Paused, time.Now(), func(since string) string {
		return fmt.Sprintf("paused since %s: the Operator stays on its installed bundle and its BundleDeployment is paused until spec.paused is false", since)
	}, "spec.paused is false: the Operator follows its spec and the catalogs")
}
