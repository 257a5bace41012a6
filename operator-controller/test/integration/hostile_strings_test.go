package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/apiservertest"
)

// Strings with characters that do not show, or that only look like others, in every string field
// of an Operator's spec: the CRD (OpenAPI and CEL rules, on a real kube-apiserver) rejects them
// when the Operator is written, naming the field and the rule. What the CRD cannot check (label
// values and matchExpressions keys and values of spec.catalogSelector: their schema sets no size
// limits, so the API server refuses the cost of CEL rules over them) is accepted and reported by
// the Resolved condition with the value escaped (operator-controller/internal/controller
// TestCatalogSelectorValuesAcceptedByTheAPIAreReportedEscaped).

// specJSON renders a spec, so that any string (NUL, controls, invalid-looking Unicode) reaches
// the API server exactly as given.
func specJSON(t *testing.T, fields map[string]any) string {
	t.Helper()
	if _, ok := fields["packageName"]; !ok {
		fields["packageName"] = "argocd-operator"
	}
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOperatorAPIRejectsHostileStrings(t *testing.T) {
	const (
		pkgRule     = "packageName must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
		versionRule = "version must be a semver version or range"
		channelRule = "channel must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
		keyRule     = "catalogSelector.matchLabels keys must be label keys"
	)
	spec := func(fields map[string]any) string { return specJSON(t, fields) }
	selector := func(sel map[string]any) string { return spec(map[string]any{"catalogSelector": sel}) }
	labels := func(k, v string) string { return selector(map[string]any{"matchLabels": map[string]any{k: v}}) }
	expr := func(e map[string]any) string { return selector(map[string]any{"matchExpressions": []any{e}}) }

	suite.CheckCases(t, operatorKind, []apiservertest.Case{
		// Accepted: what the rules allow, including what only the Resolved condition can judge.
		{Name: "a prefixed label key", Spec: labels("example.com/tier", "prod")},
		{Name: "Exists without values", Spec: expr(map[string]any{"key": "tier", "operator": "Exists"})},
		{Name: "NotIn with values", Spec: expr(map[string]any{"key": "tier", "operator": "NotIn", "values": []any{"dev"}})},
		{Name: "accepted, reported later: a label value with a zero-width space", Spec: labels("tier", "pr\u200bod")},
		{Name: "accepted, reported later: a label name part over 63 characters", Spec: labels("example.com/"+strings.Repeat("a", 64), "x")},
		{Name: "accepted, reported later: a matchExpressions key with NUL", Spec: expr(map[string]any{"key": "ti\x00er", "operator": "Exists"})},
		{Name: "accepted, reported later: a matchExpressions value with a right-to-left override", Spec: expr(map[string]any{"key": "tier", "operator": "In", "values": []any{"\u202eprod"}})},

		// packageName.
		{Name: "packageName with a non-ASCII letter", Spec: spec(map[string]any{"packageName": "café"}), WantErrs: []string{pkgRule}},
		{Name: "packageName with a zero-width space", Spec: spec(map[string]any{"packageName": "kube\u200bgreen"}), WantErrs: []string{pkgRule}},
		{Name: "packageName with a right-to-left override", Spec: spec(map[string]any{"packageName": "\u202eneerg-ebuk"}), WantErrs: []string{pkgRule}},
		{Name: "packageName with NUL", Spec: spec(map[string]any{"packageName": "argocd\x00"}), WantErrs: []string{pkgRule}},
		{Name: "packageName with a trailing newline", Spec: spec(map[string]any{"packageName": "argocd\n"}), WantErrs: []string{pkgRule}},
		{Name: "packageName in full-width letters", Spec: spec(map[string]any{"packageName": "ａｒｇｏｃｄ"}), WantErrs: []string{pkgRule}},
		{Name: "packageName with a Cyrillic look-alike", Spec: spec(map[string]any{"packageName": "\u0430rgocd"}), WantErrs: []string{pkgRule}},
		{Name: "packageName of 200 two-byte characters", Spec: spec(map[string]any{"packageName": strings.Repeat("é", 200)}), WantErrs: []string{pkgRule}},
		{Name: "packageName of 100000 characters", Spec: spec(map[string]any{"packageName": strings.Repeat("a", 100000)}), WantErrs: []string{"spec.packageName: Too long"}},

		// version.
		{Name: "version with a zero-width space", Spec: spec(map[string]any{"version": "1.0.0\u200b"}), WantErrs: []string{versionRule}},
		{Name: "version with a right-to-left override", Spec: spec(map[string]any{"version": "\u202e>=1.0.0"}), WantErrs: []string{versionRule}},
		{Name: "version with NUL", Spec: spec(map[string]any{"version": "1.0.0\x00"}), WantErrs: []string{versionRule}},
		{Name: "version with a newline between ranges", Spec: spec(map[string]any{"version": ">=1.0.0\n<2.0.0"}), WantErrs: []string{versionRule}},
		{Name: "version in full-width digits", Spec: spec(map[string]any{"version": "１.０.０"}), WantErrs: []string{versionRule}},
		{Name: "version of 65 characters", Spec: spec(map[string]any{"version": strings.Repeat("1", 65)}), WantErrs: []string{"spec.version: Too long"}},

		// channel.
		{Name: "channel with a zero-width space", Spec: spec(map[string]any{"channel": "stable\u200b"}), WantErrs: []string{channelRule}},
		{Name: "channel with a right-to-left override", Spec: spec(map[string]any{"channel": "\u202estable"}), WantErrs: []string{channelRule}},
		{Name: "channel with NUL", Spec: spec(map[string]any{"channel": "sta\x00ble"}), WantErrs: []string{channelRule}},
		{Name: "channel with a non-ASCII letter", Spec: spec(map[string]any{"channel": "stäble"}), WantErrs: []string{channelRule}},
		{Name: "channel of 254 characters", Spec: spec(map[string]any{"channel": strings.Repeat("a", 254)}), WantErrs: []string{"spec.channel: Too long"}},

		// approvedVersion, installNamespace, watchNamespaces, metadata.name.
		{Name: "approvedVersion with a zero-width space", Spec: spec(map[string]any{"upgradePolicy": "Manual", "approvedVersion": "1.0.0\u200b"}),
			WantErrs: []string{"approvedVersion must be an exact semver version such as 1.2.3"}},
		{Name: "installNamespace with a zero-width space", Spec: spec(map[string]any{"installNamespace": "argo\u200bcd"}),
			WantErrs: []string{"spec.installNamespace", "should match"}},
		{Name: "watchNamespaces with NUL", Spec: spec(map[string]any{"watchNamespaces": []any{"team\x00a"}}),
			WantErrs: []string{"spec.watchNamespaces[0]", "should match"}},
		{Name: "metadata.name with a zero-width space", ObjectName: "argo\u200bcd", Spec: spec(map[string]any{}),
			WantErrs: []string{"metadata.name: Invalid value"}},

		// catalogSelector.
		{Name: "label key with a zero-width space", Spec: labels("tier\u200b", "prod"), WantErrs: []string{keyRule}},
		{Name: "label key with a right-to-left override", Spec: labels("\u202etier", "prod"), WantErrs: []string{keyRule}},
		{Name: "label key with NUL", Spec: labels("ti\x00er", "prod"), WantErrs: []string{keyRule}},
		{Name: "label key with a non-ASCII letter", Spec: labels("tiér", "prod"), WantErrs: []string{keyRule}},
		{Name: "label key of 318 characters", Spec: labels(strings.Repeat("a", 254)+"/"+strings.Repeat("b", 63), "prod"), WantErrs: []string{keyRule}},
		{Name: "label value of 64 characters", Spec: labels("tier", strings.Repeat("a", 64)),
			WantErrs: []string{"catalogSelector.matchLabels values must be at most 63 characters"}},
		{Name: "matchExpressions key of 318 characters", Spec: expr(map[string]any{"key": strings.Repeat("a", 318), "operator": "Exists"}),
			WantErrs: []string{"catalogSelector.matchExpressions keys must be at most 317 characters"}},
		{Name: "matchExpressions operator unknown", Spec: expr(map[string]any{"key": "tier", "operator": "Contains\u200b", "values": []any{"a"}}),
			WantErrs: []string{"catalogSelector.matchExpressions operators must be In, NotIn, Exists or DoesNotExist", "catalogSelector.matchExpressions need values"}},
		{Name: "In without values", Spec: expr(map[string]any{"key": "tier", "operator": "In"}),
			WantErrs: []string{"catalogSelector.matchExpressions need values with In and NotIn, and none with Exists and DoesNotExist"}},
		{Name: "Exists with values", Spec: expr(map[string]any{"key": "tier", "operator": "Exists", "values": []any{"a"}}),
			WantErrs: []string{"catalogSelector.matchExpressions need values with In and NotIn, and none with Exists and DoesNotExist"}},
	})
}
