package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	mmsemver "github.com/Masterminds/semver/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// What an installed direct bundle declares (spec.source.type Bundle, format RegistryV1). rukpak
// reports which content it installed (the resolved source of the installed revision: an image
// digest, a git commit) but not the bundle's package, version or dependencies, so
// operator-controller reads them from that same content: it unpacks the installed revision's
// resolved source (pinned, so it reads exactly what rukpak verified and installed) with rukpak's
// own unpacker, and parses it (ReadBundleFacts). Each resolved source is read once; a failed read
// is tried again after retryInspect. The dependencies are then checked against the cluster (checkDeclared)
// and reported, never installed.

// retryInspect is how long a failed read of a bundle's content is remembered before it is tried
// again, and how often missing dependencies are checked again.
const retryInspect = time.Minute

// ServesKind reports whether the API server serves gvk (through discovery: no RBAC is needed).
type ServesKind func(ctx context.Context, gvk schema.GroupVersionKind) (bool, error)

// DirectBundleReader reads the facts of installed direct bundles.
type DirectBundleReader struct {
	// Unpacker fetches content (rukpak's source.DiskUnpacker with operator-controller's own cache).
	Unpacker source.Unpacker
	// Namespace is where ConfigMaps sources are read (operator-controller's namespace).
	Namespace string
	// ServesKind checks olm.gvk.required dependencies.
	ServesKind ServesKind
	// Timeout bounds one read (default one minute).
	Timeout time.Duration
	// Recheck is how long a failed read is remembered, and how often an Operator whose bundle's
	// dependencies are not all present is checked again (default retryInspect).
	Recheck time.Duration

	mu    sync.Mutex
	known map[string]inspected
}

type inspected struct {
	facts *BundleFacts
	err   error
	at    time.Time
}

// pinnedSource is the source of the content rukpak installed: src with the resolved image digest or
// git commit, and without verify (rukpak verified that content before installing it).
func pinnedSource(src rukpakv1alpha1.Source, rs *rukpakv1alpha1.ResolvedSource) rukpakv1alpha1.Source {
	pinned := *src.DeepCopy()
	switch {
	case pinned.Image != nil && rs.Image != nil && rs.Image.Ref != "":
		pinned.Image.Ref, pinned.Image.Verify = rs.Image.Ref, nil
	case pinned.Git != nil && rs.Git != nil && rs.Git.Commit != "":
		pinned.Git.Ref = rukpakv1alpha1.GitRef{Commit: rs.Git.Commit}
	}
	return pinned
}

// read returns the facts of the content installed from src as rs; a read failed less than
// retryInspect ago returns its error again.
func (d *DirectBundleReader) read(ctx context.Context, opName string, src rukpakv1alpha1.Source, rs *rukpakv1alpha1.ResolvedSource) (*BundleFacts, error) {
	key := resolvedRef(rs)
	d.mu.Lock()
	if d.known == nil {
		d.known = map[string]inspected{}
	}
	if k, ok := d.known[key]; ok && (k.err == nil || time.Since(k.at) < d.recheck()) {
		d.mu.Unlock()
		return k.facts, k.err
	}
	d.mu.Unlock()

	timeout := d.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unpackKey := "operator/" + opName
	facts, err := func() (*BundleFacts, error) {
		res, err := d.Unpacker.Unpack(ctx, unpackKey, pinnedSource(src, rs), source.Options{Namespace: d.Namespace})
		if err != nil {
			return nil, err
		}
		defer func() { _ = d.Unpacker.Cleanup(context.Background(), unpackKey) }()
		return ReadBundleFacts(os.DirFS(res.Dir))
	}()
	d.mu.Lock()
	d.known[key] = inspected{facts: facts, err: err, at: time.Now()}
	d.mu.Unlock()
	return facts, err
}

func (d *DirectBundleReader) recheck() time.Duration {
	if d == nil || d.Recheck <= 0 {
		return retryInspect
	}
	return d.Recheck
}

// directReport is what the status says of an installed direct bundle's content.
type directReport struct {
	facts    *BundleFacts
	readErr  error
	declared []operatorsv1alpha1.DeclaredDependency
	// after is the reader's recheck interval.
	after time.Duration
}

// inspectDirect reads what op's installed direct bundle declares and checks its dependencies;
// nil when there is nothing to read (no reader, another format, nothing installed yet).
func (r *OperatorReconciler) inspectDirect(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) *directReport {
	if r.DirectBundles == nil || bd == nil || formatOf(op) != operatorsv1alpha1.BundleFormatRegistryV1 {
		return nil
	}
	rs := installedResolvedSource(bd)
	if rs == nil {
		return nil
	}
	facts, err := r.DirectBundles.read(ctx, op.Name, bd.Spec.Source, rs)
	if err != nil {
		return &directReport{readErr: err, after: r.DirectBundles.recheck()}
	}
	rep := &directReport{facts: facts, after: r.DirectBundles.recheck()}
	if len(facts.Requires) > 0 {
		bds := &rukpakv1alpha1.BundleDeploymentList{}
		listErr := r.Client.List(ctx, bds)
		for _, req := range facts.Requires {
			rep.declared = append(rep.declared, CheckDeclared(ctx, req, op.Name, bds.Items, listErr, r.DirectBundles.ServesKind))
		}
	}
	return rep
}

// installedResolvedSource is the resolved source of bd's installed revision (nil when none).
func installedResolvedSource(bd *rukpakv1alpha1.BundleDeployment) *rukpakv1alpha1.ResolvedSource {
	if bd == nil {
		return nil
	}
	for _, h := range bd.Status.History {
		if h.Revision == bd.Status.InstalledRevision && h.ResolvedSource != nil && bd.Status.InstalledRevision > 0 {
			return h.ResolvedSource
		}
	}
	return nil
}

// CheckDeclared says whether the cluster has req: a package is present when a BundleDeployment of
// another Operator installs it at a version in the range; a group/version/kind when the API server
// serves it.
// The BundleDeployments are those operator-controller created (listErr when they could not be
// listed); self is the Operator's own name. kubectl olmv1 install --bundle --dry-run checks the
// same way.
func CheckDeclared(ctx context.Context, req Requirement, self string, bds []rukpakv1alpha1.BundleDeployment, listErr error, serves ServesKind) operatorsv1alpha1.DeclaredDependency {
	d := operatorsv1alpha1.DeclaredDependency{Type: req.Type, Value: req.Value()}
	if req.Type == propertyGVKRequired {
		gvk := schema.GroupVersionKind{Group: req.Group, Version: req.Version, Kind: req.Kind}
		ok, err := serves(ctx, gvk)
		switch {
		case err != nil:
			d.Status, d.Message = operatorsv1alpha1.DependencyUnknown, "discovery: "+err.Error()
		case ok:
			d.Status, d.Message = operatorsv1alpha1.DependencyPresent, "served by the API server"
		default:
			d.Status, d.Message = operatorsv1alpha1.DependencyMissing, fmt.Sprintf("the API server does not serve %s: no CustomResourceDefinition (or API) provides it", req.Value())
		}
		return d
	}
	if listErr != nil {
		d.Status, d.Message = operatorsv1alpha1.DependencyUnknown, "listing BundleDeployments: "+listErr.Error()
		return d
	}
	var rng *mmsemver.Constraints
	if req.VersionRange != "" {
		c, err := mmsemver.NewConstraint(req.VersionRange)
		if err != nil {
			d.Status, d.Message = operatorsv1alpha1.DependencyUnknown, fmt.Sprintf("version range %q: %v", req.VersionRange, err)
			return d
		}
		rng = c
	}
	var found []string
	for i := range bds {
		bd := &bds[i]
		if bd.Annotations[AnnotationPackage] != req.Package || bd.Labels[LabelOwnerName] == self || bd.Status.InstalledRevision == 0 {
			continue
		}
		v := bd.Annotations[AnnotationBundleVersion]
		owner := bd.Labels[LabelOwnerName]
		if v == "" {
			found = append(found, fmt.Sprintf("Operator %s installs it at an unknown version", owner))
			continue
		}
		sv, err := mmsemver.NewVersion(v)
		if err == nil && (rng == nil || rng.Check(sv)) {
			d.Status, d.Message = operatorsv1alpha1.DependencyPresent, fmt.Sprintf("Operator %s installs version %s", owner, v)
			return d
		}
		found = append(found, fmt.Sprintf("Operator %s installs version %s, outside the range", owner, v))
	}
	d.Status, d.Message = operatorsv1alpha1.DependencyMissing, "no Operator installs package "+req.Package
	if len(found) > 0 {
		d.Message = strings.Join(found, "; ")
	}
	return d
}

// missing are the values of the declared dependencies that are not Present.
func (rep *directReport) missing() (missing, unknown []string) {
	for _, d := range rep.declared {
		switch d.Status {
		case operatorsv1alpha1.DependencyMissing:
			missing = append(missing, d.Type+" "+d.Value)
		case operatorsv1alpha1.DependencyUnknown:
			unknown = append(unknown, d.Type+" "+d.Value+" ("+d.Message+")")
		}
	}
	return missing, unknown
}

// message is what the Resolved condition says of the bundle's content.
func (rep *directReport) message() string {
	if rep == nil {
		return ""
	}
	if rep.readErr != nil {
		return fmt.Sprintf("; its package, version and dependencies could not be read from its content: %v (tried again in %s)", rep.readErr, rep.after)
	}
	f := rep.facts
	msg := fmt.Sprintf("; the installed bundle is package %s version %s (%s)", f.Package, f.Version, f.CSVName)
	if len(rep.declared) == 0 {
		msg += " and declares no dependencies"
	} else {
		msg += fmt.Sprintf(" and declares %d dependencies, reported in status.declaredDependencies and never installed for it", len(rep.declared))
		missing, unknown := rep.missing()
		if len(missing) > 0 {
			msg += "; missing on the cluster: " + strings.Join(missing, ", ")
		} else if len(unknown) == 0 {
			msg += "; the cluster has all of them"
		}
		if len(unknown) > 0 {
			msg += "; not checked: " + strings.Join(unknown, ", ")
		}
	}
	if len(f.Unsupported) > 0 {
		msg += "; not checked: its " + strings.Join(f.Unsupported, ", ") + " dependencies"
	}
	return msg
}

// recheck says when the report should be made again: after the reader's Recheck when the content could not
// be read or a dependency is not present (a CRD or an Operator may arrive).
func (rep *directReport) recheck() time.Duration {
	if rep == nil {
		return 0
	}
	if m, u := rep.missing(); rep.readErr != nil || len(m)+len(u) > 0 {
		return rep.after
	}
	return 0
}

// DiscoveryServesKind is a ServesKind that asks the API server's discovery for gvk's group/version.
func DiscoveryServesKind(resources func(groupVersion string) ([]string, error)) ServesKind {
	return func(_ context.Context, gvk schema.GroupVersionKind) (bool, error) {
		kinds, err := resources(gvk.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, k := range kinds {
			if k == gvk.Kind {
				return true, nil
			}
		}
		return false, nil
	}
}

// withFacts completes what a direct bundle's installation says with what its content declares: the
// CSV's name and version, and its olm.package property and declared dependencies as properties.
func withFacts(in installation, rep *directReport) installation {
	if rep == nil || rep.facts == nil || in.bundle == nil {
		return in
	}
	f := rep.facts
	b := in.bundle.DeepCopy()
	b.Name, b.Version = f.CSVName, f.Version
	b.Properties = []operatorsv1alpha1.BundleProperty{{Type: "olm.package", Value: compactJSON(map[string]string{"packageName": f.Package, "version": f.Version})}}
	for _, r := range f.Requires {
		v := map[string]string{"group": r.Group, "version": r.Version, "kind": r.Kind}
		if r.Type == propertyPackageRequired {
			v = map[string]string{"packageName": r.Package, "versionRange": r.VersionRange}
		}
		if len(b.Properties) < 64 {
			b.Properties = append(b.Properties, operatorsv1alpha1.BundleProperty{Type: r.Type, Value: compactJSON(v)})
		}
	}
	in.bundle = b
	return in
}

// DiscoveryKinds lists the kinds the API server serves in a group/version, for DiscoveryServesKind.
func DiscoveryKinds(d discovery.DiscoveryInterface) func(groupVersion string) ([]string, error) {
	return func(gv string) ([]string, error) {
		l, err := d.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return nil, err
		}
		kinds := make([]string, 0, len(l.APIResources))
		for _, r := range l.APIResources {
			kinds = append(kinds, r.Kind)
		}
		return kinds, nil
	}
}

// compactJSON is v as compact JSON without HTML escaping (a version range keeps its ">").
func compactJSON(v map[string]string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}
