package registryv1

import (
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// InstallMode is the install mode of one render: the mode and the namespaces the operator watches.
type InstallMode struct {
	// Type is AllNamespaces, OwnNamespace, SingleNamespace or MultiNamespace.
	Type operatorsv1alpha1.InstallModeType
	// Targets are the watched namespaces, sorted; nil for AllNamespaces.
	Targets []string
	// Defaulted is true when watchNamespaces was unset and the mode was chosen by the default rule
	// (AllNamespaces if supported, else OwnNamespace).
	Defaulted bool
}

// TargetNamespacesAnnotation is the value OLM puts in olm.targetNamespaces: the watched namespaces,
// comma-joined, and "" for AllNamespaces.
func (m InstallMode) TargetNamespacesAnnotation() string { return strings.Join(m.Targets, ",") }

// String describes the mode for a status message, e.g. "install mode OwnNamespace (default,
// watching operators)" or "install mode AllNamespaces".
func (m InstallMode) String() string {
	var details []string
	if m.Defaulted {
		details = append(details, "default")
	}
	if len(m.Targets) > 0 {
		details = append(details, "watching "+strings.Join(m.Targets, ", "))
	}
	if len(details) == 0 {
		return "install mode " + string(m.Type)
	}
	return fmt.Sprintf("install mode %s (%s)", m.Type, strings.Join(details, ", "))
}

// allInstallModes are the install modes OLM defines, in the order messages list them.
var allInstallModes = []operatorsv1alpha1.InstallModeType{
	operatorsv1alpha1.InstallModeTypeAllNamespaces,
	operatorsv1alpha1.InstallModeTypeOwnNamespace,
	operatorsv1alpha1.InstallModeTypeSingleNamespace,
	operatorsv1alpha1.InstallModeTypeMultiNamespace,
}

// ChooseInstallMode is the install-mode rule, a pure function of the CSV's spec.installModes, the
// install namespace and spec.config.watchNamespaces:
//
//   - watchNamespaces unset (nil or empty): AllNamespaces if the CSV supports it, else OwnNamespace
//     (watching the install namespace) if it supports that, else an UnsupportedInstallMode error that
//     names the value to set;
//   - the install namespace alone: OwnNamespace; one other namespace: SingleNamespace; several:
//     MultiNamespace; [""]: AllNamespaces. The CSV must support the mode.
//
// csvName is only used in messages. Errors are *provisioner.InvalidBundleError with reason
// UnsupportedInstallMode (the mode is not supported), InvalidConfiguration (watchNamespaces mixes ""
// with names) or InvalidBundle (the CSV declares an unknown install mode or supports none).
func ChooseInstallMode(csvName string, csvInstallModes []operatorsv1alpha1.InstallMode, installNamespace string, watchNamespaces []string) (InstallMode, error) {
	m, err := chooseInstallMode(csvName, csvInstallModes, installNamespace, watchNamespaces)
	if re, ok := err.(*reasonError); ok {
		return InstallMode{}, &provisioner.InvalidBundleError{Reason: re.reason, Message: re.msg}
	}
	return m, err
}

func chooseInstallMode(csvName string, csvInstallModes []operatorsv1alpha1.InstallMode, installNamespace string, watchNamespaces []string) (InstallMode, error) {
	supported, err := supportedModes(csvName, csvInstallModes)
	if err != nil {
		return InstallMode{}, err
	}
	var ok []operatorsv1alpha1.InstallModeType
	for _, t := range allInstallModes {
		if supported[t] {
			ok = append(ok, t)
		}
	}
	if len(ok) == 0 {
		return InstallMode{}, &reasonError{reason: ReasonInvalidBundle, msg: fmt.Sprintf(
			"ClusterServiceVersion %q supports no install mode (spec.installModes has none with supported: true); the bundle must be fixed by its author", csvName)}
	}

	if len(watchNamespaces) == 0 {
		switch {
		case supported[operatorsv1alpha1.InstallModeTypeAllNamespaces]:
			return InstallMode{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Defaulted: true}, nil
		case supported[operatorsv1alpha1.InstallModeTypeOwnNamespace]:
			return InstallMode{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Targets: []string{installNamespace}, Defaulted: true}, nil
		}
		hints := make([]string, 0, 2)
		for _, t := range ok {
			hints = append(hints, fmt.Sprintf("to %s for %s", watchValue(t, installNamespace), t))
		}
		return InstallMode{}, &reasonError{reason: ReasonUnsupportedInstallMode, msg: fmt.Sprintf(
			"spec.config.watchNamespaces is unset and ClusterServiceVersion %q supports neither AllNamespaces nor OwnNamespace, the install modes used by default; set spec.config.watchNamespaces (Operator: spec.watchNamespaces) %s",
			csvName, strings.Join(hints, " or "))}
	}

	mode, err := modeFromWatchNamespaces(installNamespace, watchNamespaces)
	if err != nil {
		return InstallMode{}, err
	}
	if !supported[mode.Type] {
		hints := make([]string, 0, len(ok))
		for _, t := range ok {
			hints = append(hints, fmt.Sprintf("%s (%s)", t, watchHint(t, installNamespace, supported)))
		}
		return InstallMode{}, &reasonError{reason: ReasonUnsupportedInstallMode, msg: fmt.Sprintf(
			"install mode %s (spec.config.watchNamespaces %s) is not supported by ClusterServiceVersion %q; it supports %s",
			mode.Type, watchString(watchNamespaces), csvName, strings.Join(hints, ", "))}
	}
	return mode, nil
}

// supportedModes checks the CSV's install modes (an unknown type, e.g. a typo, is an error) and
// returns which are supported.
func supportedModes(csvName string, modes []operatorsv1alpha1.InstallMode) (map[operatorsv1alpha1.InstallModeType]bool, error) {
	supported := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, im := range modes {
		known := false
		for _, t := range allInstallModes {
			if im.Type == t {
				known = true
			}
		}
		if !known {
			return nil, &reasonError{reason: ReasonInvalidBundle, msg: fmt.Sprintf(
				"ClusterServiceVersion %q declares install mode %q, which is not one of %s; the bundle must be fixed by its author",
				csvName, im.Type, joinModes(allInstallModes))}
		}
		supported[im.Type] = supported[im.Type] || im.Supported
	}
	return supported, nil
}

// resolveInstallMode is ChooseInstallMode for a parsed CSV.
func resolveInstallMode(csv *operatorsv1alpha1.ClusterServiceVersion, installNamespace string, watch []string) (InstallMode, error) {
	return chooseInstallMode(csv.Name, csv.Spec.InstallModes, installNamespace, watch)
}

func modeFromWatchNamespaces(installNamespace string, watch []string) (InstallMode, error) {
	seen := map[string]bool{}
	var targets []string
	for _, ns := range watch {
		if ns == "" {
			if len(watch) == 1 {
				return InstallMode{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces}, nil
			}
			return InstallMode{}, &reasonError{reason: ReasonInvalidConfiguration, msg: fmt.Sprintf(
				"spec.config.watchNamespaces %s mixes \"\" (all namespaces) with named namespaces; omit it for the default mode or list only names", watchString(watch))}
		}
		if !seen[ns] {
			seen[ns] = true
			targets = append(targets, ns)
		}
	}
	switch {
	case len(targets) == 1 && targets[0] == installNamespace:
		return InstallMode{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Targets: targets}, nil
	case len(targets) == 1:
		return InstallMode{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Targets: targets}, nil
	default:
		sort.Strings(targets)
		return InstallMode{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Targets: targets}, nil
	}
}

// watchHint says how to select install mode t. Omitting watchNamespaces selects AllNamespaces when
// it is supported, and OwnNamespace when only that of the two is.
func watchHint(t operatorsv1alpha1.InstallModeType, installNamespace string, supported map[operatorsv1alpha1.InstallModeType]bool) string {
	switch t {
	case operatorsv1alpha1.InstallModeTypeAllNamespaces:
		return "omit watchNamespaces"
	case operatorsv1alpha1.InstallModeTypeOwnNamespace:
		if !supported[operatorsv1alpha1.InstallModeTypeAllNamespaces] {
			return fmt.Sprintf("omit watchNamespaces or set it to [%s]", installNamespace)
		}
		return fmt.Sprintf("watchNamespaces: [%s]", installNamespace)
	case operatorsv1alpha1.InstallModeTypeSingleNamespace:
		return "watchNamespaces: [<one other namespace>]"
	default:
		return "watchNamespaces: [<ns1>, <ns2>, ...]"
	}
}

// watchValue is the watchNamespaces value, as JSON, that selects install mode t.
func watchValue(t operatorsv1alpha1.InstallModeType, installNamespace string) string {
	switch t {
	case operatorsv1alpha1.InstallModeTypeSingleNamespace:
		return fmt.Sprintf(`["<a namespace other than %s>"]`, installNamespace)
	case operatorsv1alpha1.InstallModeTypeMultiNamespace:
		return `["<ns1>", "<ns2>", ...]`
	case operatorsv1alpha1.InstallModeTypeOwnNamespace:
		return fmt.Sprintf("[%q]", installNamespace)
	default:
		return "unset"
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
