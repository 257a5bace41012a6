package registryv1

import (
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// installMode is the resolved install mode of one render: the mode and the namespaces the operator
// watches (nil for AllNamespaces).
type installMode struct {
	Type    operatorsv1alpha1.InstallModeType
	Targets []string
}

// TargetNamespacesAnnotation is the value OLM puts in olm.targetNamespaces: the watched namespaces,
// comma-joined, and "" for AllNamespaces.
func (m installMode) TargetNamespacesAnnotation() string { return strings.Join(m.Targets, ",") }

// allInstallModes are the install modes OLM defines, in the order messages list them.
var allInstallModes = []operatorsv1alpha1.InstallModeType{
	operatorsv1alpha1.InstallModeTypeAllNamespaces,
	operatorsv1alpha1.InstallModeTypeOwnNamespace,
	operatorsv1alpha1.InstallModeTypeSingleNamespace,
	operatorsv1alpha1.InstallModeTypeMultiNamespace,
}

// resolveInstallMode picks the install mode from spec.config.watchNamespaces and checks it against
// the install modes the CSV supports. Unknown install mode types in the CSV (typos) are an error.
func resolveInstallMode(csv *operatorsv1alpha1.ClusterServiceVersion, installNamespace string, watch []string) (installMode, error) {
	supported := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, im := range csv.Spec.InstallModes {
		known := false
		for _, t := range allInstallModes {
			if im.Type == t {
				known = true
			}
		}
		if !known {
			return installMode{}, &reasonError{reason: ReasonInvalidBundle, msg: fmt.Sprintf(
				"ClusterServiceVersion %q declares install mode %q, which is not one of %s; the bundle must be fixed by its author",
				csv.Name, im.Type, joinModes(allInstallModes))}
		}
		supported[im.Type] = supported[im.Type] || im.Supported
	}

	mode, err := modeFromWatchNamespaces(installNamespace, watch)
	if err != nil {
		return installMode{}, err
	}
	if !supported[mode.Type] {
		var ok []operatorsv1alpha1.InstallModeType
		for _, t := range allInstallModes {
			if supported[t] {
				ok = append(ok, t)
			}
		}
		if len(ok) == 0 {
			return installMode{}, &reasonError{reason: ReasonInvalidBundle, msg: fmt.Sprintf(
				"ClusterServiceVersion %q supports no install mode (spec.installModes has none with supported: true)", csv.Name)}
		}
		hints := make([]string, 0, len(ok))
		for _, t := range ok {
			hints = append(hints, fmt.Sprintf("%s (%s)", t, watchHint(t, installNamespace)))
		}
		return installMode{}, &reasonError{reason: ReasonUnsupportedInstallMode, msg: fmt.Sprintf(
			"install mode %s (spec.config.watchNamespaces %s) is not supported by ClusterServiceVersion %q; it supports %s",
			mode.Type, watchString(watch), csv.Name, strings.Join(hints, ", "))}
	}
	return mode, nil
}

func modeFromWatchNamespaces(installNamespace string, watch []string) (installMode, error) {
	seen := map[string]bool{}
	var targets []string
	for _, ns := range watch {
		if ns == "" {
			if len(watch) == 1 {
				return installMode{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces}, nil
			}
			return installMode{}, &reasonError{reason: ReasonInvalidConfiguration, msg: fmt.Sprintf(
				"spec.config.watchNamespaces %s mixes \"\" (all namespaces) with named namespaces; omit it for AllNamespaces or list only names", watchString(watch))}
		}
		if !seen[ns] {
			seen[ns] = true
			targets = append(targets, ns)
		}
	}
	switch {
	case len(targets) == 0:
		return installMode{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces}, nil
	case len(targets) == 1 && targets[0] == installNamespace:
		return installMode{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Targets: targets}, nil
	case len(targets) == 1:
		return installMode{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Targets: targets}, nil
	default:
		sort.Strings(targets)
		return installMode{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Targets: targets}, nil
	}
}

func watchHint(t operatorsv1alpha1.InstallModeType, installNamespace string) string {
	switch t {
	case operatorsv1alpha1.InstallModeTypeAllNamespaces:
		return "omit watchNamespaces"
	case operatorsv1alpha1.InstallModeTypeOwnNamespace:
		return fmt.Sprintf("watchNamespaces: [%s]", installNamespace)
	case operatorsv1alpha1.InstallModeTypeSingleNamespace:
		return "watchNamespaces: [<one other namespace>]"
	default:
		return "watchNamespaces: [<ns1>, <ns2>, ...]"
	}
}

func watchString(watch []string) string {
	if len(watch) == 0 {
		return "unset"
	}
	q := make([]string, len(watch))
	for i, w := range watch {
		q[i] = fmt.Sprintf("%q", w)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func joinModes(ms []operatorsv1alpha1.InstallModeType) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// reasonError carries the condition reason of a render problem.
type reasonError struct {
	reason string
	msg    string
}

func (e *reasonError) Error() string { return e.msg }
