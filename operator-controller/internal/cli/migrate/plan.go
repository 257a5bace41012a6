package migrate

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// Plan is what migrate will do for one Subscription, printed before anything is changed.
type Plan struct {
	Subscription string `json:"subscription"`
	CSV          string `json:"csv"`
	// Phase is the phase a previous run reached ("" for a new migration).
	Phase       string                      `json:"phase,omitempty"`
	Catalog     *catalogdv1alpha1.Catalog   `json:"catalog,omitempty"`
	Operator    *operatorsv1alpha1.Operator `json:"operator,omitempty"`
	Objects     []Object                    `json:"objects,omitempty"`
	Differences []string                    `json:"differences,omitempty"`
	Blockers    []string                    `json:"blockers,omitempty"`
	Notes       []string                    `json:"notes,omitempty"`
	Steps       []string                    `json:"steps,omitempty"`
}

// Prepare reads the OLM v0 installation of Subscription ns/name (or the migration a previous run
// started for it) and plans its migration. It changes nothing.
func Prepare(ctx context.Context, c client.Client, ns, name string) (*Migration, error) {
	m := &Migration{c: c, Namespace: ns, Subscription: name}
	plan := &Plan{Subscription: ns + "/" + name}
	m.Plan = plan

	// A previous run: the Operator records where it comes from.
	started, err := findStarted(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	if started != nil {
		_, _, m.CSV, _ = ParseMigratedFrom(started.Annotations[AnnotationMigratedFrom])
		m.Operator, m.Package = started.Name, started.Spec.PackageName
		plan.Phase = started.Annotations[AnnotationMigrationPhase]
	}
	st, err := ReadV0(ctx, c, ns, name, m.CSV, m.Package)
	if err != nil {
		return nil, err
	}
	if started != nil && phaseReached(plan.Phase, PhaseReleasing) {
		// OLM v1 is Installed and OLM v0 is being released: only the release steps are left.
		m.Target = &Target{Operator: started}
		plan.CSV, plan.Operator = m.CSV, started
		for _, u := range st.Marked {
			a := ActionRelease
			if m.superseded(u) {
				a = ActionDelete
			}
			plan.Objects = append(plan.Objects, Object{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Action: a})
		}
		plan.Steps = remainingSteps(plan.Phase)
		return m, nil
	}

	t, blockers := Map(st)
	plan.Blockers = blockers
	if t == nil {
		return m, nil
	}
	if started != nil && st.CSV.Name != m.CSV {
		plan.Blockers = append(plan.Blockers, fmt.Sprintf("OLM v0 moved Subscription %s/%s from CSV %s to %s since Operator %s was created for it: delete that Operator (its deletionPolicy Orphan leaves every object) and run migrate again",
			ns, name, m.CSV, st.CSV.Name, started.Name))
		return m, nil
	}
	m.Target = t
	m.CSV, m.Operator, m.Package = st.CSV.Name, t.Operator.Name, t.Operator.Spec.PackageName
	plan.CSV, plan.Catalog, plan.Operator, plan.Notes = st.CSV.Name, t.Catalog, t.Operator, t.Notes
	if started == nil {
		plan.Blockers = append(plan.Blockers, existingBlockers(ctx, c, t)...)
	}
	r, err := Render(ctx, st, t.Operator, c.RESTMapper())
	if err != nil {
		plan.Blockers = append(plan.Blockers, err.Error())
		return m, nil
	}
	plan.Objects, plan.Differences = r.Objects, r.Differences
	plan.Blockers = append(plan.Blockers, r.Blockers...)
	for _, o := range r.ControllerFlags {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s %s: its ownerReference to CSV %s is marked controller; the flag is cleared before the Operator is created, so that collisionPolicy IfNoController may adopt it (OLM v0 finds what a CSV owns by UID and labels, not by that flag)", o.Kind, o.Name, m.CSV))
	}
	if len(r.Differences) > 0 {
		plan.Blockers = append(plan.Blockers, fmt.Sprintf("OLM v1 would render %d difference(s) in the running pod templates (listed above): adopting would replace the operator's pods; keep it on OLM v0, or set the missing values in the Subscription's spec.config so that both agree", len(r.Differences)))
	}
	plan.Steps = remainingSteps(plan.Phase)
	return m, nil
}

// findStarted returns the Operator a previous run created for Subscription ns/name, or nil.
func findStarted(ctx context.Context, c client.Client, ns, name string) (*operatorsv1alpha1.Operator, error) {
	ops := &operatorsv1alpha1.OperatorList{}
	if err := c.List(ctx, ops); err != nil {
		return nil, err
	}
	for i := range ops.Items {
		if s, sub, _, ok := ParseMigratedFrom(ops.Items[i].Annotations[AnnotationMigratedFrom]); ok && s == ns && sub == name {
			return &ops.Items[i], nil
		}
	}
	return nil, nil
}

// existingBlockers reports OLM v1 objects that already exist under the names the migration needs.
func existingBlockers(ctx context.Context, c client.Client, t *Target) []string {
	var out []string
	op := &operatorsv1alpha1.Operator{}
	if err := c.Get(ctx, types.NamespacedName{Name: t.Operator.Name}, op); err == nil {
		if ns, sub, _, ok := ParseMigratedFrom(op.Annotations[AnnotationMigratedFrom]); ok && ns != t.Operator.Spec.InstallNamespace {
			// OLM v0 installs a package once per namespace; OLM v1 once per cluster.
			out = append(out, fmt.Sprintf("package %s is installed by OLM v0 in namespace %s too, and was migrated from there (Subscription %s/%s) to Operator %s: OLM v1 installs a package once per cluster "+
				"(its CRDs can have one owner), so this installation cannot be moved beside it; keep it on OLM v0, or uninstall it with OLM v0 (delete the Subscription and the CSV: the CRDs and custom resources stay) and let Operator %s serve both namespaces (spec.watchNamespaces)",
				t.Operator.Spec.PackageName, ns, ns, sub, op.Name, op.Name))
		} else {
			out = append(out, fmt.Sprintf("Operator %s already exists: OLM v1 already installs package %s (or another Operator has its name); delete it, or uninstall one of the two", op.Name, t.Operator.Spec.PackageName))
		}
	}
	if t.Catalog != nil {
		cat := &catalogdv1alpha1.Catalog{}
		if err := c.Get(ctx, types.NamespacedName{Name: t.Catalog.Name}, cat); err == nil && !sameImage(cat, t.Catalog) {
			out = append(out, fmt.Sprintf("Catalog %s already exists with another source: delete or rename it", cat.Name))
		}
	}
	return out
}

func remainingSteps(phase string) []string {
	var out []string
	for i, s := range Steps {
		if !phaseReached(phase, s.skipFrom) {
			out = append(out, fmt.Sprintf("%d. %s", i+1, s.Name))
		}
	}
	return out
}

// Write prints the plan for a person.
func (p *Plan) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Migrate Subscription %s", p.Subscription)
	if p.CSV != "" {
		fmt.Fprintf(&b, " (CSV %s)", p.CSV)
	}
	if p.Operator != nil {
		fmt.Fprintf(&b, " to Operator %s", p.Operator.Name)
	}
	if p.Phase != "" {
		fmt.Fprintf(&b, ": resuming a migration in phase %s", p.Phase)
	}
	b.WriteString("\n")
	if c := p.Catalog; c != nil && c.Spec.Source.Image != nil {
		fmt.Fprintf(&b, "  Catalog %s: image %s (from CatalogSource %s)\n", c.Name, c.Spec.Source.Image.Ref, c.Annotations[AnnotationMigratedFrom])
	}
	if op := p.Operator; op != nil && p.Phase == "" {
		s := op.Spec
		watch := "all namespaces"
		if len(s.WatchNamespaces) > 0 {
			watch = strings.Join(s.WatchNamespaces, ",")
		}
		fmt.Fprintf(&b, "  Operator %s: package %s, channel %s, version %s, upgradePolicy %s, installNamespace %s, watchNamespaces %s, collisionPolicy %s\n",
			op.Name, s.PackageName, output.OrNone(s.Channel), s.Version, s.UpgradePolicy, s.InstallNamespace, watch, s.CollisionPolicy)
		if dc := s.Config; dc != nil && dc.DeploymentConfig != nil {
			var env []string
			for _, e := range dc.DeploymentConfig.Env {
				env = append(env, e.Name)
			}
			var ann []string
			for k := range dc.DeploymentConfig.Annotations {
				ann = append(ann, k)
			}
			sort.Strings(ann)
			fmt.Fprintf(&b, "    deploymentConfig: env %s; annotations %s (what OLM v0 put on the pod template)\n", strings.Join(env, ","), output.OrNone(strings.Join(ann, ",")))
		}
	}
	if err := writeString(w, b.String()); err != nil {
		return err
	}
	if len(p.Objects) > 0 {
		t := output.NewTable("ACTION", "KIND", "NAMESPACE", "NAME")
		for _, o := range p.Objects {
			t.Add(o.Action, o.Kind, output.OrDash(o.Namespace), o.Name)
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	b.Reset()
	if p.Phase == "" && p.Operator != nil {
		if len(p.Differences) == 0 {
			b.WriteString("Pod templates: OLM v1 renders the running pod templates unchanged (no pod is replaced)\n")
		} else {
			b.WriteString("Differences between what OLM v0 runs and what OLM v1 would render:\n")
			for _, d := range p.Differences {
				fmt.Fprintf(&b, "  - %s\n", d)
			}
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	if len(p.Blockers) > 0 {
		b.WriteString("Cannot migrate:\n")
		for _, x := range p.Blockers {
			fmt.Fprintf(&b, "  - %s\n", x)
		}
	} else if len(p.Steps) > 0 {
		b.WriteString("Steps:\n")
		for _, s := range p.Steps {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return writeString(w, b.String())
}

func writeString(w io.Writer, s string) error {
	_, err := io.WriteString(w, s)
	return err
}
