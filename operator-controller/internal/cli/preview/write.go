package preview

import (
	"fmt"
	"io"
	"strings"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// writePlan prints a Plan for people: the resolution and why, the objects, their diffs, the RBAC
// and the CRD upgrade-safety findings, each under a heading.
func Write(w io.Writer, p *Plan) error {
	pw := &planWriter{w: w}
	pw.header(p)
	pw.failure(p)
	pw.resolution(p.Bundles)
	pw.objects(p.Objects)
	pw.diffs(p.Objects)
	pw.rbac(p.RBAC)
	pw.crdSafety(p.CRDs)
	pw.notes(p.Notes)
	return pw.err
}

// failure says why resolution fails, and what operator-controller would do, when it does.
func (pw *planWriter) failure(p *Plan) {
	if p.Failed == "" {
		return
	}
	pw.linef("")
	pw.linef("Resolution fails: %s", p.Failed)
	if p.From != "" {
		pw.linef("(operator-controller would report Resolved=False with this message; the installed bundle %s stays)", p.From)
	} else {
		pw.linef("(operator-controller would report Resolved=False with this message and install nothing)")
	}
}

// resolution prints the RESOLUTION table of the chosen bundles and the WHY of each.
func (pw *planWriter) resolution(bundles []PlannedBundle) {
	if len(bundles) == 0 {
		return
	}
	pw.section("RESOLUTION")
	t := output.NewTable("OPERATOR", "BUNDLE", "VERSION", "CHANGE", "CATALOG", "OPERATOR CREATED BY")
	for _, b := range bundles {
		change := b.Change
		if b.Installed != "" && b.Change != "unchanged" {
			change = fmt.Sprintf("%s from %s", b.Change, b.Installed)
		}
		t.Add(b.Operator, b.Bundle, b.Version, change, b.Catalog, output.OrDash(b.OperatorCreated))
	}
	pw.table(t)
	pw.section("WHY")
	for _, b := range bundles {
		pw.linef("%s (Operator %s, image %s)", b.Bundle, b.Operator, b.Image)
		for _, l := range b.Why {
			pw.linef("  %s", l)
		}
	}
}

// objects prints the OBJECTS table and how many objects each action has.
func (pw *planWriter) objects(objs []PlannedObject) {
	if len(objs) == 0 {
		return
	}
	pw.section("OBJECTS")
	t := output.NewTable("ACTION", "KIND", "NAMESPACE", "NAME", "OPERATOR", "BY", "NOTE")
	for _, o := range objs {
		t.Add(o.Action, o.Kind, output.OrDash(o.Namespace), o.Name, o.Operator, o.By, o.Note)
	}
	pw.table(t)
	pw.linef("%s", actionCounts(objs))
}

// actionCounts is e.g. "2 to create, 1 unchanged": how many objects each action has.
func actionCounts(objs []PlannedObject) string {
	counts := map[string]int{}
	for _, o := range objs {
		counts[o.Action]++
	}
	var parts []string
	for _, a := range []struct{ action, phrase string }{
		{"create", "to create"}, {"update", "to update"}, {"delete", "to delete"}, {"unchanged", "unchanged"}, {"unknown", "unknown (not readable)"},
	} {
		if n := counts[a.action]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a.phrase))
		}
	}
	return strings.Join(parts, ", ")
}

// diffs prints the DIFF section: the diff of every object that has one.
func (pw *planWriter) diffs(objs []PlannedObject) {
	var diffs []PlannedObject
	for _, o := range objs {
		if o.Diff != "" {
			diffs = append(diffs, o)
		}
	}
	if len(diffs) == 0 {
		return
	}
	pw.section("DIFF")
	for i, o := range diffs {
		if i > 0 {
			pw.raw("\n")
		}
		pw.raw(strings.TrimRight(o.Diff, "\n") + "\n")
	}
}

// rbac prints the RBAC section: every role, how it is bound, its rules and warnings.
func (pw *planWriter) rbac(grants []RBACGrant) {
	if len(grants) == 0 {
		return
	}
	pw.section("RBAC")
	for _, g := range grants {
		bound := "not bound by the bundle"
		if g.Binding != "" {
			bound = fmt.Sprintf("bound %s by %s to %s", g.Scope, g.Binding, strings.Join(g.Subjects, ", "))
		}
		pw.linef("%s (%s), %s [Operator %s]", g.Role, g.Change, bound, g.Operator)
		for _, r := range g.Rules {
			pw.linef("    %s", r)
		}
		for _, warn := range g.Warnings {
			pw.linef("    ! %s", warn)
		}
	}
}

// crdSafety prints the CRD UPGRADE SAFETY section: a verdict per CRD, with the problems of an
// unsafe one.
func (pw *planWriter) crdSafety(findings []CRDFinding) {
	if len(findings) == 0 {
		return
	}
	pw.section("CRD UPGRADE SAFETY")
	for _, f := range findings {
		switch {
		case !f.Installed:
			pw.linef("%s: new, nothing installed to break [Operator %s]", f.CRD, f.Operator)
		case f.Safe():
			pw.linef("%s: safe: no scope change, no stored version removed, every existing object valid under the new schema [Operator %s]", f.CRD, f.Operator)
		default:
			verdict := "UNSAFE: rukpak would refuse the upgrade (Installed=False, reason UpgradeBlocked) and keep the installed bundle"
			if f.Skipped {
				verdict = "UNSAFE, but the BundleDeployment skips the check (core.rukpak.io/skip-crd-upgrade-safety): rukpak would apply it anyway"
			}
			pw.linef("%s: %s [Operator %s]", f.CRD, verdict, f.Operator)
			for _, pr := range f.Problems {
				pw.linef("    %s", pr)
			}
		}
	}
}

// notes prints the NOTES section.
func (pw *planWriter) notes(notes []string) {
	if len(notes) == 0 {
		return
	}
	pw.section("NOTES")
	for _, n := range notes {
		pw.linef("- %s", n)
	}
}

func (pw *planWriter) header(p *Plan) {
	what := "preview"
	if p.Action == "install" {
		what = "dry run"
	}
	switch {
	case p.Action == "install":
		pw.linef("Install package %s as Operator %s: %s", p.Package, p.Operator, versionChange(p))
	default:
		pw.linef("Upgrade Operator %s (package %s): %s", p.Operator, p.Package, versionChange(p))
	}
	pw.linef("(%s: nothing was changed in the cluster)", what)
}

func versionChange(p *Plan) string {
	switch {
	case p.Failed != "":
		return "no bundle can be chosen"
	case p.From == "":
		return "version " + p.To
	case p.From == p.To:
		return "stays on " + p.From + " (nothing to upgrade)"
	}
	return p.From + " -> " + p.To
}

// planWriter writes sections and remembers the first error.
type planWriter struct {
	w   io.Writer
	err error
}

func (pw *planWriter) raw(s string) {
	if pw.err == nil {
		_, pw.err = io.WriteString(pw.w, s)
	}
}

func (pw *planWriter) linef(format string, args ...any) { pw.raw(fmt.Sprintf(format, args...) + "\n") }

func (pw *planWriter) section(title string) { pw.raw("\n" + title + "\n") }

func (pw *planWriter) table(t *output.Table) {
	if pw.err == nil {
		pw.err = t.Write(pw.w)
	}
}
