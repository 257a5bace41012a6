// Package helm implements the core-rukpak-io-helm provisioner: the bundle is a Helm chart, rendered
// in-process with Helm's template engine and handed to the apply engine like any other bundle, so
// installs and upgrades are revisions of the same Helm release storage the other provisioners use.
//
// What is rendered: the chart's templates and its enabled subcharts' (library charts contribute
// their named templates), plus the files in crds/ of the chart and its subcharts, with values merged
// from the chart's defaults, spec.config.valuesFrom (in order) and spec.config.values (last).
// values.schema.json is enforced; Chart.yaml kubeVersion is checked against the cluster's version.
// The valuesFrom documents and the cluster's version and API versions (.Capabilities) are gathered
// into the Request before the render (Needs); without them Helm's default capabilities are used.
//
// Hooks: test hooks (helm.sh/hook: test) are left out, since only `helm test` runs them. Every
// other hook is rejected with an error that names it: rukpak applies a chart declaratively and
// re-applies it to revert drift, so a run-once action bound to an install, upgrade, rollback or
// delete event has nothing to map to. A chart whose hooks are switched by values can be installed
// with those hooks switched off.
//
// Rendering must be deterministic: rukpak renders on every reconcile and records a new revision
// whenever the output changes, so a chart is rendered twice and a template whose output differs
// (randAlphaNum, uuidv4, now …) is reported. `lookup` sees nothing (the render never reads the
// cluster), .Release.IsInstall is true and .Release.Revision is 1 on every render.
//
// Rendering is bounded in time and output size (limits.go): a chart whose templates loop or
// produce too much is reported with reason RenderLimitExceeded.
package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// ProvisionerClassName is the spec.provisionerClassName this renderer serves.
const ProvisionerClassName = "core-rukpak-io-helm"

// Reasons of the InvalidBundleErrors this renderer returns (the Unpacked condition's reason).
const (
	// ReasonInvalidChart: the content is not a loadable, installable chart, or a template fails.
	ReasonInvalidChart = "InvalidBundle"
	// ReasonInvalidValues: the values do not satisfy values.schema.json, or cannot be read.
	ReasonInvalidValues = "InvalidValues"
	// ReasonUnsupportedHook: the chart declares a Helm hook other than a test hook.
	ReasonUnsupportedHook = "UnsupportedHelmHook"
	// ReasonIncompatibleKubeVersion: Chart.yaml kubeVersion excludes the cluster's version.
	ReasonIncompatibleKubeVersion = "IncompatibleKubeVersion"
)

// notesFile is the suffix of the rendered NOTES.txt of a chart, which is not a manifest.
const notesFile = "/templates/NOTES.txt"

// Renderer renders Helm charts.
type Renderer struct {
	limits Limits
	slots  *renderSlots
}

var (
	_ provisioner.Renderer  = (*Renderer)(nil)
	_ provisioner.Needer    = (*Renderer)(nil)
	_ provisioner.Describer = (*Renderer)(nil)
)

// Keys of a Result's RevisionInfo.
const (
	// InfoChartVersion is the rendered chart's Chart.yaml version.
	InfoChartVersion = "chartVersion"
	// InfoValuesHash is the ValuesHash of the merged user values the chart was rendered with.
	InfoValuesHash = "valuesHash"
)

// Option configures a Renderer.
type Option func(*Renderer)

// New returns a Helm Renderer.
func New(opts ...Option) *Renderer {
	r := &Renderer{}
	for _, o := range opts {
		o(r)
	}
	r.slots = newRenderSlots(r.limits.withDefaults().MaxConcurrent)
	return r
}

// Needs says what a render reads besides the chart: the documents spec.config.valuesFrom names,
// and the cluster's version and API versions (.Capabilities and the kubeVersion check).
func (*Renderer) Needs() provisioner.Needs {
	return provisioner.Needs{ValuesFrom: true, Capabilities: true}
}

// Render loads the chart from req.Content, merges the values and renders the chart's objects.
func (r *Renderer) Render(ctx context.Context, req provisioner.Request) ([]client.Object, error) {
	res, err := r.RenderDescribed(ctx, req)
	return res.Objects, err
}

// RenderDescribed is Render, with what the render used as the Result's RevisionInfo: the chart's
// version (InfoChartVersion) and the hash of the merged user values (InfoValuesHash), which the
// controller records with a new revision (status.history).
func (r *Renderer) RenderDescribed(ctx context.Context, req provisioner.Request) (provisioner.Result, error) {
	ch, name, err := loadInstallable(req.Content)
	if err != nil {
		return provisioner.Result{}, err
	}
	vals, err := mergeValues(req)
	if err != nil {
		return provisioner.Result{}, err
	}
	valuesHash, err := ValuesHash(vals)
	if err != nil {
		return provisioner.Result{}, invalid(ReasonInvalidValues, fmt.Sprintf("%s: the merged values cannot be encoded: %v", name, err))
	}
	caps, err := capabilities(ch, name, req.Capabilities)
	if err != nil {
		return provisioner.Result{}, err
	}
	top, err := renderValues(ch, name, vals, req, caps)
	if err != nil {
		return provisioner.Result{}, err
	}
	out, err := r.renderTemplates(ctx, req.Name, name, ch, top, caps)
	if err != nil {
		return provisioner.Result{}, err
	}
	if err := checkHooks(name, out.hooks); err != nil {
		return provisioner.Result{}, err
	}
	objs, err := chartObjects(name, ch, out.manifests)
	if err != nil {
		return provisioner.Result{}, err
	}
	return provisioner.Result{
		Objects:      objs,
		RevisionInfo: map[string]string{InfoChartVersion: ch.Metadata.Version, InfoValuesHash: valuesHash},
	}, nil
}

// loadInstallable loads the chart from content and checks that it can be installed as it is: an
// application chart with every dependency vendored. name describes it for messages.
func loadInstallable(content fs.FS) (ch *chart.Chart, name string, err error) {
	ch, where, err := loadChart(content)
	if err != nil {
		return nil, "", invalid(ReasonInvalidChart, err.Error())
	}
	name = fmt.Sprintf("chart %s %s (%s)", ch.Name(), ch.Metadata.Version, where)
	if ch.Metadata.Type != "" && ch.Metadata.Type != "application" {
		return nil, "", invalid(ReasonInvalidChart, fmt.Sprintf("%s has type %q and cannot be installed: only application charts can; a library chart is used as a dependency of one", name, ch.Metadata.Type))
	}
	if missing := missingDependencies(ch); len(missing) > 0 {
		return nil, "", invalid(ReasonInvalidChart, fmt.Sprintf("%s: dependencies found in Chart.yaml, but missing in charts/: %s (vendor them with `helm dependency build` before publishing the chart)", name, strings.Join(missing, ", ")))
	}
	return ch, name, nil
}

// capabilities are what templates see as .Capabilities: the gathered ones, else Helm's defaults.
// The chart's kubeVersion must admit their Kubernetes version.
func capabilities(ch *chart.Chart, name string, gathered *provisioner.Capabilities) (*chartutil.Capabilities, error) {
	caps := chartutil.DefaultCapabilities
	if gathered != nil {
		kv, err := chartutil.ParseKubeVersion(gathered.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("discovering the cluster's version and API versions for .Capabilities: parsing the server version %q: %w", gathered.KubeVersion, err)
		}
		caps = &chartutil.Capabilities{KubeVersion: *kv, APIVersions: chartutil.VersionSet(gathered.APIVersions), HelmVersion: chartutil.DefaultCapabilities.HelmVersion}
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, invalid(ReasonIncompatibleKubeVersion, fmt.Sprintf("%s requires kubeVersion %q, and the cluster runs Kubernetes %s: use a chart version that supports this cluster", name, kv, caps.KubeVersion.String()))
	}
	return caps, nil
}

// renderValues enables the subcharts the values switch on and builds the values templates see
// (.Values checked against values.schema.json, .Release, .Capabilities).
func renderValues(ch *chart.Chart, name string, vals map[string]any, req provisioner.Request, caps *chartutil.Capabilities) (chartutil.Values, error) {
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, invalid(ReasonInvalidChart, fmt.Sprintf("%s: processing its dependencies: %v", name, err))
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: req.Name, Namespace: req.InstallNamespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		// Helm's schema report spans lines (chart, then one "- at '/path': problem" per violation).
		msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
		return nil, invalid(ReasonInvalidValues, fmt.Sprintf("%s: %s (fix spec.config.values or spec.config.valuesFrom)", name, msg))
	}
	return top, nil
}

// renderTemplates renders the chart within the limits (deterministically, see renderDeterministic)
// for BundleDeployment release.
func (r *Renderer) renderTemplates(ctx context.Context, release, name string, ch *chart.Chart, top chartutil.Values, caps *chartutil.Capabilities) (rendering, error) {
	maxBytes := r.limits.withDefaults().MaxOutputBytes
	out, err := r.renderWithin(ctx, release, name, func(givenUp func() bool) (rendering, error) {
		return renderDeterministic(ch, top, caps, maxBytes, givenUp)
	})
	var tooLarge *outputError
	var notRun *notRenderedError
	var ib *provisioner.InvalidBundleError
	switch {
	case errors.As(err, &tooLarge):
		return rendering{}, invalid(ReasonRenderLimitExceeded, fmt.Sprintf("%s: %s", name, tooLarge.msg))
	case errors.As(err, &notRun) || errors.As(err, &ib):
		return rendering{}, err
	case err != nil:
		return rendering{}, invalid(ReasonInvalidChart, fmt.Sprintf("%s: %v", name, err))
	}
	return out, nil
}

// chartObjects decodes the chart's CRDs (crds/) and rendered manifests, in that order; each object
// may appear once.
func chartObjects(name string, ch *chart.Chart, manifests []releaseutil.Manifest) ([]client.Object, error) {
	var objs []manifest.Object
	for _, crd := range ch.CRDObjects() {
		o, err := manifest.Decode(crd.Filename, crd.File.Data)
		if err != nil {
			return nil, invalid(ReasonInvalidChart, fmt.Sprintf("%s: %v", name, err))
		}
		objs = append(objs, o...)
	}
	for _, m := range manifests {
		o, err := manifest.Decode(m.Name, []byte(m.Content))
		if err != nil {
			return nil, invalid(ReasonInvalidChart, fmt.Sprintf("%s: rendered %v", name, err))
		}
		objs = append(objs, o...)
	}
	if len(objs) == 0 {
		return nil, invalid(ReasonInvalidChart, fmt.Sprintf("%s renders no objects with these values", name))
	}
	return unique(name, objs)
}

// ValuesHash is "sha256:<hex>" of vals as JSON (map keys sorted): the same values give the same
// hash whatever their source or order.
func ValuesHash(vals map[string]any) (string, error) {
	b, err := json.Marshal(vals)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// missingDependencies lists the dependencies Chart.yaml declares that charts/ does not hold.
func missingDependencies(ch *chart.Chart) []string {
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if !slices.ContainsFunc(ch.Dependencies(), func(c *chart.Chart) bool { return c.Name() == d.Name }) {
			missing = append(missing, d.Name)
		}
	}
	return missing
}

// rendering is a chart's rendered hooks and manifests.
type rendering struct {
	hooks     []*release.Hook
	manifests []releaseutil.Manifest
}

// outputError is a render whose output exceeds the size limit.
type outputError struct{ msg string }

func (e *outputError) Error() string { return e.msg }

// renderDeterministic renders the chart twice and fails when an object's output differs: such a
// chart would get a new revision on every reconcile. Hooks are not compared (test hooks often carry
// random names, and they are not applied). Each render may produce at most maxBytes; when givenUp
// reports true after the first, nobody waits for the result and the second is not started.
func renderDeterministic(ch *chart.Chart, top chartutil.Values, caps *chartutil.Capabilities, maxBytes int64, givenUp func() bool) (rendering, error) {
	hooks, first, err := renderOnce(ch, top, caps, maxBytes)
	if err != nil {
		return rendering{}, err
	}
	if givenUp() {
		return rendering{}, errors.New("given up")
	}
	_, second, err := renderOnce(ch, top, caps, maxBytes)
	if err != nil {
		return rendering{}, err
	}
	var differ []string
	for i, m := range first {
		if i >= len(second) || second[i].Name != m.Name || second[i].Content != m.Content {
			differ = append(differ, m.Name)
		}
	}
	if len(differ) > 0 || len(first) != len(second) {
		return rendering{}, fmt.Errorf("%s render differently each time (random or time-based functions such as randAlphaNum, uuidv4, now, genCA): rukpak renders on every reconcile and would record a new revision each time; pass such values in spec.config.values instead",
			strings.Join(slices.Compact(differ), ", "))
	}
	return rendering{hooks: hooks, manifests: first}, nil
}

// renderOnce renders the templates and splits the output into hooks and manifests (in install
// order), leaving NOTES.txt out. More than maxBytes of output is an *outputError.
func renderOnce(ch *chart.Chart, top chartutil.Values, caps *chartutil.Capabilities, maxBytes int64) ([]*release.Hook, []releaseutil.Manifest, error) {
	var e engine.Engine
	files, err := e.Render(ch, top)
	if err != nil {
		return nil, nil, err
	}
	if msg := outputTooLarge(files, maxBytes); msg != "" {
		return nil, nil, &outputError{msg: msg}
	}
	for k := range files {
		if strings.HasSuffix(k, notesFile) {
			delete(files, k)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, nil, fmt.Errorf("the rendered templates are not valid manifests: %w", err)
	}
	return hooks, manifests, nil
}

// checkHooks rejects every hook but test hooks, naming them.
func checkHooks(name string, hooks []*release.Hook) error {
	var rejected []string
	for _, h := range hooks {
		var events []string
		test := true
		for _, e := range h.Events {
			events = append(events, e.String())
			test = test && e == release.HookTest
		}
		if test {
			continue
		}
		rejected = append(rejected, fmt.Sprintf("%s %q in %s (helm.sh/hook: %s)", h.Kind, h.Name, h.Path, strings.Join(events, ",")))
	}
	if len(rejected) == 0 {
		return nil
	}
	return invalid(ReasonUnsupportedHook, fmt.Sprintf("%s declares Helm hooks, which rukpak does not run: %s. rukpak applies a chart's objects declaratively and re-applies them to revert drift, so there is no install/upgrade/delete event to run a hook on; switch the hooks off through values if the chart allows it, or use a chart without them (test hooks are ignored)",
		name, strings.Join(rejected, "; ")))
}

// unique fails when two documents declare the same object.
func unique(name string, objs []manifest.Object) ([]client.Object, error) {
	seen := map[string]string{}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		u := o.Obj
		key := fmt.Sprintf("%s/%s %s/%s", u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())
		if prev, dup := seen[key]; dup {
			return nil, invalid(ReasonInvalidChart, fmt.Sprintf("%s: %s %q is rendered by both %s and %s; each object may appear once", name, u.GetKind(), u.GetName(), prev, o.Source()))
		}
		seen[key] = o.Source()
		out = append(out, u)
	}
	return out, nil
}

func invalid(reason, msg string) error {
	return &provisioner.InvalidBundleError{Reason: reason, Message: "helm " + msg}
}
