package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// packageInfo is what search shows of one package of one catalog.
type packageInfo struct {
	Catalog        string        `json:"catalog"`
	Package        string        `json:"package"`
	DefaultChannel string        `json:"defaultChannel"`
	Description    string        `json:"description,omitempty"`
	Channels       []channelInfo `json:"channels"`
}

type channelInfo struct {
	Name    string      `json:"name"`
	Entries []entryInfo `json:"entries,omitempty"`
}

type entryInfo struct {
	Bundle    string   `json:"bundle"`
	Version   string   `json:"version"`
	Image     string   `json:"image,omitempty"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

func newSearchCommand(o *options) *cobra.Command {
	var catalog string
	cmd := &cobra.Command{
		Use:   "search [PACKAGE]",
		Short: "Find packages, their channels and versions in the served catalogs (users)",
		Long: `Without PACKAGE, list every package of every served catalog with its default channel and channels.
With PACKAGE, list its channels and versions (newest first) and their upgrade edges; a PACKAGE that is
no package's exact name lists the packages whose names contain it. Reads catalogd's CatalogMetadata API.`,
		Example: `  kubectl olmv1 search
  kubectl olmv1 search cert-manager
  kubectl olmv1 search cert --catalog operatorhub -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			sel := fields.Set{metadatav1alpha1.FieldSchema: declcfg.SchemaPackage}
			if catalog != "" {
				sel[metadatav1alpha1.FieldCatalog] = catalog
			}
			pkgs, err := listMetadata(ctx, c, sel)
			if err != nil {
				return err
			}
			var infos []packageInfo
			if len(args) == 1 {
				var exact []metadatav1alpha1.CatalogMetadata
				for _, m := range pkgs {
					if m.Spec.Name == args[0] {
						exact = append(exact, m)
					}
				}
				if len(exact) > 0 {
					infos, err = packageDetails(ctx, c, exact)
					if err != nil {
						return err
					}
					return o.Print(infos, func() *output.Table { return versionsTable(infos) })
				}
				pkgs = slices.DeleteFunc(pkgs, func(m metadatav1alpha1.CatalogMetadata) bool { return !strings.Contains(m.Spec.Name, args[0]) })
				if len(pkgs) == 0 {
					return fmt.Errorf("no package named or containing %q in the served catalogs (`kubectl olmv1 catalog list` shows them)", args[0])
				}
			}
			sel = fields.Set{metadatav1alpha1.FieldSchema: declcfg.SchemaChannel}
			if catalog != "" {
				sel[metadatav1alpha1.FieldCatalog] = catalog
			}
			chans, err := listMetadata(ctx, c, sel)
			if err != nil {
				return err
			}
			infos = summarize(pkgs, chans)
			return o.Print(infos, func() *output.Table { return packagesTable(infos) })
		},
	}
	cmd.Flags().StringVar(&catalog, "catalog", "", "search only this Catalog")
	return cmd
}

// listMetadata lists every CatalogMetadata matching the field selector, page by page.
func listMetadata(ctx context.Context, c client.Client, sel fields.Set) ([]metadatav1alpha1.CatalogMetadata, error) {
	var out []metadatav1alpha1.CatalogMetadata
	cont := ""
	for {
		list := &metadatav1alpha1.CatalogMetadataList{}
		if err := c.List(ctx, list, &client.ListOptions{FieldSelector: fields.SelectorFromSet(sel), Limit: 500, Continue: cont}); err != nil {
			return nil, fmt.Errorf("listing catalogmetadata (%s): %w (is catalogd serving? check `kubectl get apiservices` and `kubectl olmv1 catalog list`)", sel, err)
		}
		out = append(out, list.Items...)
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}

// summarize builds one packageInfo per (catalog, package) from olm.package and olm.channel blobs.
func summarize(pkgs, chans []metadatav1alpha1.CatalogMetadata) []packageInfo {
	type key struct{ catalog, pkg string }
	byKey := map[key]*packageInfo{}
	var keys []key
	for _, m := range pkgs {
		var p declcfg.Package
		_ = json.Unmarshal(m.Spec.Content.Raw, &p)
		k := key{m.Spec.Catalog, m.Spec.Name}
		byKey[k] = &packageInfo{Catalog: k.catalog, Package: k.pkg, DefaultChannel: p.DefaultChannel, Description: firstLine(p.Description)}
		keys = append(keys, k)
	}
	for _, m := range chans {
		if info, ok := byKey[key{m.Spec.Catalog, m.Spec.Package}]; ok {
			info.Channels = append(info.Channels, channelInfo{Name: m.Spec.Name})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.pkg != b.pkg {
			return strings.Compare(a.pkg, b.pkg)
		}
		return strings.Compare(a.catalog, b.catalog)
	})
	out := make([]packageInfo, 0, len(keys))
	for _, k := range keys {
		info := byKey[k]
		slices.SortFunc(info.Channels, func(a, b channelInfo) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, *info)
	}
	return out
}

// packageDetails reads the channels and bundles of each (catalog, package) of pkgs.
func packageDetails(ctx context.Context, c client.Client, pkgs []metadatav1alpha1.CatalogMetadata) ([]packageInfo, error) {
	var out []packageInfo
	for _, pm := range pkgs {
		blobs, err := listMetadata(ctx, c, fields.Set{metadatav1alpha1.FieldCatalog: pm.Spec.Catalog, metadatav1alpha1.FieldPackage: pm.Spec.Name})
		if err != nil {
			return nil, err
		}
		out = append(out, details(pm, blobs))
	}
	return out, nil
}

func details(pm metadatav1alpha1.CatalogMetadata, blobs []metadatav1alpha1.CatalogMetadata) packageInfo {
	var p declcfg.Package
	_ = json.Unmarshal(pm.Spec.Content.Raw, &p)
	info := packageInfo{Catalog: pm.Spec.Catalog, Package: pm.Spec.Name, DefaultChannel: p.DefaultChannel, Description: firstLine(p.Description)}
	versions, images := map[string]string{}, map[string]string{}
	var channels []declcfg.Channel
	for _, m := range blobs {
		switch m.Spec.Schema {
		case declcfg.SchemaBundle:
			var b declcfg.Bundle
			if json.Unmarshal(m.Spec.Content.Raw, &b) != nil {
				continue
			}
			images[b.Name] = b.Image
			for _, prop := range b.Properties {
				if prop.Type == property.TypePackage {
					var v property.Package
					if json.Unmarshal(prop.Value, &v) == nil {
						versions[b.Name] = v.Version
					}
				}
			}
		case declcfg.SchemaChannel:
			var ch declcfg.Channel
			if json.Unmarshal(m.Spec.Content.Raw, &ch) == nil {
				channels = append(channels, ch)
			}
		}
	}
	slices.SortFunc(channels, func(a, b declcfg.Channel) int { return strings.Compare(a.Name, b.Name) })
	for _, ch := range channels {
		ci := channelInfo{Name: ch.Name}
		for _, e := range ch.Entries {
			ci.Entries = append(ci.Entries, entryInfo{Bundle: e.Name, Version: versions[e.Name], Image: images[e.Name], Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange})
		}
		slices.SortFunc(ci.Entries, func(a, b entryInfo) int { return compareVersions(b.Version, a.Version) })
		info.Channels = append(info.Channels, ci)
	}
	return info
}

func compareVersions(a, b string) int {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return va.Compare(vb)
}

func packagesTable(infos []packageInfo) *output.Table {
	t := output.NewTable("PACKAGE", "CATALOG", "DEFAULT CHANNEL", "CHANNELS", "DESCRIPTION")
	for _, p := range infos {
		var names []string
		for _, c := range p.Channels {
			names = append(names, c.Name)
		}
		t.Add(p.Package, p.Catalog, output.OrNone(p.DefaultChannel), output.OrNone(strings.Join(names, ",")), p.Description)
	}
	return t
}

func versionsTable(infos []packageInfo) *output.Table {
	t := output.NewTable("PACKAGE", "CATALOG", "CHANNEL", "VERSION", "BUNDLE", "UPGRADES FROM")
	for _, p := range infos {
		for _, c := range p.Channels {
			name := c.Name
			if name == p.DefaultChannel {
				name += " (default)"
			}
			for _, e := range c.Entries {
				var from []string
				if e.Replaces != "" {
					from = append(from, e.Replaces)
				}
				from = append(from, e.Skips...)
				if e.SkipRange != "" {
					from = append(from, e.SkipRange)
				}
				t.Add(p.Package, p.Catalog, name, output.OrNone(e.Version), e.Bundle, output.OrNone(strings.Join(from, ", ")))
			}
		}
	}
	return t
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
