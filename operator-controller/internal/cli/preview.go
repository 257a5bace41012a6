package cli

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/preview"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/pull"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
)

// The commands' side of previews (install --dry-run, upgrade --preview): their flags, and printing
// the Plan that package preview computes.

// previewFlags are the flags of install --dry-run and upgrade --preview that concern the preview.
type previewFlags struct {
	insecure     bool
	certProvider string
}

func (f *previewFlags) bind(cmd interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
}) {
	cmd.BoolVar(&f.insecure, "insecure", false, "preview: pull bundle images over plain HTTP")
	cmd.StringVar(&f.certProvider, "cert-provider", bundlerender.SelfSigned, "preview: the webhook certificate provider rukpak runs with: selfSigned (rukpak's default; the preview's CA is a throwaway one, so webhook certificates always differ), certManager or openshiftServiceCA")
}

// newPlanner returns a Planner that reads through c, made read-only, and pulls bundle images.
func (o *options) newPlanner(c client.Client, f previewFlags) *preview.Planner {
	return preview.New(c, func(ctx context.Context, image string) (string, func(), error) {
		if o.Pull != nil {
			return o.Pull(ctx, image, f.insecure)
		}
		return pull.ToDir(ctx, image, f.insecure)
	}, f.certProvider).WithClusterVersion(o.ClusterVersion)
}

// installDryRun prints the plan of installing op (not created yet): resolved from the catalogs, or,
// for a direct bundle (install --bundle), its own.
func (o *options) installDryRun(ctx context.Context, c client.Client, op *operatorsv1alpha1.Operator, pf previewFlags) error {
	p := o.newPlanner(c, pf)
	install := p.Install
	if op.Spec.IsDirect() {
		install = p.InstallDirect
	}
	plan, err := install(ctx, op)
	if err != nil {
		return err
	}
	return o.printPlan(plan, fmt.Errorf("operator %s would not be installed", op.Name))
}

// previewUpgrade prints the plan of changing op into dry (as the API server would store it).
func (o *options) previewUpgrade(ctx context.Context, p *preview.Planner, st *preview.State, op, dry *operatorsv1alpha1.Operator) error {
	plan, err := p.Upgrade(ctx, st, op, dry)
	if err != nil {
		return err
	}
	return o.printPlan(plan, fmt.Errorf("operator %s: resolution would fail", op.Name))
}

// printPlan prints the plan as the output flag says; when resolution fails it returns failed,
// already explained by the plan.
func (o *options) printPlan(plan *preview.Plan, failed error) error {
	var err error
	if o.Output != "table" {
		err = o.Print(plan, nil)
	} else {
		err = preview.Write(o.Out, plan)
	}
	if err != nil {
		return err
	}
	if plan.Failed != "" {
		return &command.SilentError{Err: failed}
	}
	return nil
}
