package olm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// StageClusterVersion is the pipeline stage that prohibits the bundles the cluster cannot run
// (ClusterVersions). It runs after bundle-dependencies, so that it sees every bundle of the problem.
const StageClusterVersion = "cluster-version"

// Property types that bound the cluster versions a bundle runs on. The CSV's spec.minKubeVersion is
// read from the olm.csv.metadata property.
const (
	PropertyMinKubeVersion      = "olm.minKubeVersion"
	PropertyMaxOpenShiftVersion = "olm.maxOpenShiftVersion"
)

// Cluster is what resolution knows of the cluster the bundles are for. A zero field is unknown,
// and the constraints on it are not checked.
type Cluster struct {
	// KubeVersion is the API server's version as discovery reports it (gitVersion), e.g.
	// "v1.37.2", "1.37.2-gke.1" or "v1.37.2+k3s1". Only major.minor.patch counts.
	KubeVersion string `json:"kubeVersion,omitempty"`
	// OpenShiftVersion is the OpenShift version (config.openshift.io ClusterVersion), "" when the
	// cluster is not OpenShift: olm.maxOpenShiftVersion is then not checked.
	OpenShiftVersion string `json:"openShiftVersion,omitempty"`
}

// Known reports whether c carries any version to check.
func (c *Cluster) Known() bool { return c != nil && (c.KubeVersion != "" || c.OpenShiftVersion != "") }

// Validate reports a version of c that is not a version.
func (c *Cluster) Validate() error {
	if c == nil {
		return nil
	}
	if c.KubeVersion != "" {
		if _, err := ParseClusterVersion(c.KubeVersion); err != nil {
			return fmt.Errorf("cluster Kubernetes version: %w", err)
		}
	}
	if c.OpenShiftVersion != "" {
		if _, err := ParseClusterVersion(c.OpenShiftVersion); err != nil {
			return fmt.Errorf("cluster OpenShift version: %w", err)
		}
	}
	return nil
}

// ClusterVersion is major.minor.patch; Parts says how many of them were written (2 or 3).
type ClusterVersion struct {
	Major, Minor, Patch uint64
	Parts               int
}

func (v ClusterVersion) String() string {
	if v.Parts == 2 {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// compare compares a and b by major.minor.patch, or by major.minor only when either was written
// without a patch.
func (v ClusterVersion) compare(o ClusterVersion) int {
	a := []uint64{v.Major, v.Minor, v.Patch}
	b := []uint64{o.Major, o.Minor, o.Patch}
	n := 3
	if v.Parts == 2 || o.Parts == 2 {
		n = 2
	}
	for i := 0; i < n; i++ {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

var versionPrefix = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?([-+].*)?$`)

// ParseClusterVersion reads "1.37.2", "v1.37.2", "1.37" or a version with a pre-release or build
// suffix ("1.37.2-gke.1", "v1.37.2+k3s1"), which does not count: clusters name their builds so.
func ParseClusterVersion(s string) (ClusterVersion, error) {
	m := versionPrefix.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return ClusterVersion{}, fmt.Errorf("%q is not a version like 1.37.2", s)
	}
	v := ClusterVersion{Parts: 2}
	var err error
	if v.Major, err = strconv.ParseUint(m[1], 10, 64); err == nil {
		v.Minor, err = strconv.ParseUint(m[2], 10, 64)
	}
	if err == nil && m[3] != "" {
		v.Parts = 3
		v.Patch, err = strconv.ParseUint(m[3], 10, 64)
	}
	if err != nil {
		return ClusterVersion{}, fmt.Errorf("%q is not a version like 1.37.2: %w", s, err)
	}
	return v, nil
}

// ClusterSkip is the Detail of the constraint that prohibits a bundle the cluster cannot run.
type ClusterSkip struct {
	Bundle *Bundle
	// Message is "bundle foo.v2.0.0 skipped: needs Kubernetes >= 1.40.0 (minKubeVersion), …".
	Message string
}

// CannotRun returns why the cluster c cannot run b ("" when it can, or when c does not know the
// versions b's constraints are about). A constraint whose value is not a version is reported.
func (c *Cluster) CannotRun(b *Bundle) string {
	if !c.Known() {
		return ""
	}
	var why []string
	for _, p := range b.Properties {
		switch p.Type {
		case property.TypeCSVMetadata, PropertyMinKubeVersion:
			if c.KubeVersion == "" {
				continue
			}
			raw, source := "", "minKubeVersion"
			if p.Type == property.TypeCSVMetadata {
				var md struct {
					MinKubeVersion string `json:"minKubeVersion"`
				}
				if err := json.Unmarshal(p.Value, &md); err != nil || md.MinKubeVersion == "" {
					continue
				}
				raw = md.MinKubeVersion
			} else {
				raw, source = propertyString(p.Value), PropertyMinKubeVersion
			}
			why = append(why, c.check(raw, source, c.KubeVersion, "Kubernetes", ">=", 1)...)
		case PropertyMaxOpenShiftVersion:
			if c.OpenShiftVersion == "" {
				continue
			}
			why = append(why, c.check(propertyString(p.Value), PropertyMaxOpenShiftVersion, c.OpenShiftVersion, "OpenShift", "<=", -1)...)
		}
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("bundle %s skipped: %s", visible(b.Name), strings.Join(why, "; "))
}

// check compares the cluster's version with a bound (bad when cluster vs bound compares as
// wrongSign) and says what fails.
func (c *Cluster) check(raw, source, clusterVersion, product, op string, wrongSign int) []string {
	bound, err := ParseClusterVersion(raw)
	if err != nil {
		return []string{fmt.Sprintf("its %s %q is not a version, so it cannot be checked against the cluster", source, raw)}
	}
	have, err := ParseClusterVersion(clusterVersion)
	if err != nil {
		return nil
	}
	if bound.compare(have) == wrongSign {
		return []string{fmt.Sprintf("needs %s %s %s (%s), the cluster runs %s", product, op, bound, source, have)}
	}
	return nil
}

// propertyString is a property value that is a JSON string, or the raw value (a number such as
// 4.16) when it is not.
func propertyString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

// isInstalled reports whether b is one of the installed bundles.
func isInstalled(b *Bundle, installed []InstalledBundle) bool {
	for _, ib := range installed {
		if ib.Package != b.Package {
			continue
		}
		if (ib.BundleName != "" && ib.BundleName == b.Name) || (ib.BundleName == "" && ib.Version == b.VersionString) {
			return true
		}
	}
	return false
}

// ClusterVersions prohibits every bundle of the problem that the cluster c cannot run, with a
// message naming the bundle and the constraint. Installed bundles are left alone: a bundle that
// runs stays (`kubectl olmv1 status --cluster-version` tells which would not run after a cluster
// upgrade).
func ClusterVersions(c *Cluster, installed []InstalledBundle) resolve.VariableSource {
	return resolve.NewSource(StageClusterVersion, func(_ context.Context, vars *resolve.Variables) error {
		for _, v := range vars.All() {
			b, ok := v.Entity.(*Bundle)
			if !ok || isInstalled(b, installed) {
				continue
			}
			if msg := c.CannotRun(b); msg != "" {
				v.Add(resolve.Prohibited().WithMessage(msg).WithDetail(ClusterSkip{Bundle: b, Message: msg}))
			}
		}
		return nil
	})
}

// Skipped returns, for requirement req, the message of each candidate bundle (in preference order)
// that the cluster c cannot run, except installed ones, and how many candidates req has in all.
func (c *Cluster) Skipped(idx *Index, req Requirement, installed []InstalledBundle) (out []string, total int) {
	if !c.Known() {
		return nil, 0
	}
	cands, _, err := candidates(idx, req)
	if err != nil {
		return nil, 0
	}
	for _, b := range cands {
		if isInstalled(b, installed) {
			continue
		}
		if msg := c.CannotRun(b); msg != "" {
			out = append(out, msg)
		}
	}
	return out, len(cands)
}
