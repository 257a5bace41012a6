package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func newCatalogAddCommand(o *options) *cobra.Command {
	var (
		poll     time.Duration
		priority int32
		insecure bool
		secret   string
		wait     bool
		timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "add NAME IMAGE",
		Short: "Create a Catalog on the cluster from a catalog image (users)",
		Long: `Create a Catalog named NAME whose content is the catalog image IMAGE. With --poll, catalogd checks a
tag for new content at that interval. With --wait, waits until the Catalog is served.`,
		Example: `  kubectl olmv1 catalog add operatorhub quay.io/operatorhubio/catalog:latest --poll 10m
  kubectl olmv1 catalog add my-catalog localhost:5000/my-catalog:latest --priority 10 --wait`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			cat := &catalogdv1alpha1.Catalog{
				ObjectMeta: metav1.ObjectMeta{Name: args[0]},
				Spec: catalogdv1alpha1.CatalogSpec{Priority: priority, Source: rukpakv1alpha1.Source{
					Type:  rukpakv1alpha1.SourceTypeImage,
					Image: &rukpakv1alpha1.ImageSource{Ref: args[1], InsecureSkipTLSVerify: insecure, PullSecret: secret},
				}},
			}
			if poll > 0 {
				cat.Spec.Source.Image.PollInterval = &metav1.Duration{Duration: poll}
			}
			if err := c.Create(cmd.Context(), cat); err != nil {
				return fmt.Errorf("create Catalog %s: %w", args[0], err)
			}
			fmt.Fprintf(o.ErrOut, "catalog %s created\n", args[0])
			if wait {
				if err := o.waitCatalogServing(cmd.Context(), c, args[0], timeout); err != nil {
					return err
				}
			}
			if o.Output != "table" {
				return o.Print(cat, nil)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&poll, "poll", 0, "how often to check the image tag for new content (e.g. 10m); 0 never polls")
	cmd.Flags().Int32Var(&priority, "priority", 0, "ranks this catalog against others offering the same bundle")
	cmd.Flags().BoolVar(&insecure, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate")
	cmd.Flags().StringVar(&secret, "pull-secret", "", "name of a docker-config Secret in catalogd's namespace")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the Catalog is served")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// waitCatalogServing prints the Catalog's condition changes until it serves its current generation.
// A paused Catalog (Paused=True for its current generation) does not unpack its current spec until
// it is resumed, so the wait stops there with an error that says so, unless the current generation
// was unpacked before the pause and is served: that is success, paused or not.
func (o *options) waitCatalogServing(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	last := ""
	return o.poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
		cat := &catalogdv1alpha1.Catalog{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cat); err != nil {
			return false, "", err
		}
		u := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
		s := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeServing)
		p := currentCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused, cat.Generation)
		paused := p != nil && p.Status == metav1.ConditionTrue
		line := fmt.Sprintf("catalog %s: Unpacked=%s Serving=%s", name, condSummary(u), condSummary(s))
		if paused {
			line += " Paused=True"
		}
		if line != last {
			fmt.Fprintln(o.ErrOut, line)
			last = line
		}
		if u != nil && u.Status == metav1.ConditionFalse && u.ObservedGeneration == cat.Generation && u.Reason != catalogdv1alpha1.ReasonPending {
			return false, line, fmt.Errorf("not served: Unpacked=False reason %s: %s (see kubectl get catalog %s -o yaml)", u.Reason, u.Message, name)
		}
		done := u != nil && u.Status == metav1.ConditionTrue && u.ObservedGeneration == cat.Generation && s != nil && s.Status == metav1.ConditionTrue
		if !done && paused {
			return false, line, fmt.Errorf("catalog %s is paused (spec.paused), so its current spec (generation %d) is not unpacked until it is resumed: %s; resume it with `kubectl olmv1 catalog resume %s --wait`",
				name, cat.Generation, p.Message, name)
		}
		return done, line, nil
	})
}

func condSummary(c *metav1.Condition) string {
	if c == nil {
		return "<none>"
	}
	s := string(c.Status) + " (" + c.Reason + ")"
	if c.Status != metav1.ConditionTrue && c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

func newCatalogListCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the Catalogs of the cluster with their serving state and content hash (users)",
		Example: "  kubectl olmv1 catalog list\n  kubectl olmv1 catalog list -o yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			list := &catalogdv1alpha1.CatalogList{}
			if err := c.List(cmd.Context(), list); err != nil {
				return fmt.Errorf("list Catalogs: %w", err)
			}
			for i := range list.Items {
				list.Items[i].ManagedFields = nil
			}
			return o.Print(list, func() *output.Table { return catalogTable(list.Items, time.Now()) })
		},
	}
}

func catalogTable(items []catalogdv1alpha1.Catalog, now time.Time) *output.Table {
	t := output.NewTable("NAME", "SOURCE", "PRIORITY", "SERVING", "HASH", "PACKAGES", "BUNDLES", "LAST UNPACKED", "MESSAGE")
	for _, c := range items {
		pkgs, bundles := "", ""
		if c.Status.Counts != nil {
			pkgs, bundles = fmt.Sprint(c.Status.Counts.Packages), fmt.Sprint(c.Status.Counts.Bundles)
		}
		last := ""
		if c.Status.LastUnpacked != nil {
			last = output.Age(*c.Status.LastUnpacked, now)
		}
		msg := ""
		if u := meta.FindStatusCondition(c.Status.Conditions, catalogdv1alpha1.TypeUnpacked); u != nil && u.Status != metav1.ConditionTrue {
			msg = u.Reason + ": " + u.Message
		}
		hash := c.Status.ShortHash
		if hash == "" {
			hash = c.Status.ContentHash
		}
		t.Add(c.Name, sourceString(c.Spec.Source), fmt.Sprint(c.Spec.Priority), output.OrNone(conditionStatus(c.Status.Conditions, catalogdv1alpha1.TypeServing, 0)),
			output.OrNone(hash), output.OrNone(pkgs), output.OrNone(bundles), output.OrNone(last), msg)
	}
	return t
}

func sourceString(s rukpakv1alpha1.Source) string {
	switch {
	case s.Image != nil:
		return s.Image.Ref
	case s.HTTP != nil:
		return s.HTTP.URL
	case s.Git != nil:
		return s.Git.Repository
	case len(s.ConfigMaps) > 0:
		return fmt.Sprintf("%d ConfigMap(s)", len(s.ConfigMaps))
	}
	return string(s.Type)
}
