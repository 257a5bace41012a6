package registryv1

import (
	"context"
	"reflect"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

const (
	sprockets   = "testdata/sprockets"
	sprocketsNS = "sprockets-system"
	sprocketCSV = "manifests/sprockets.clusterserviceversion.yaml"
)

func modes(supported ...operatorsv1alpha1.InstallModeType) []operatorsv1alpha1.InstallMode {
	var out []operatorsv1alpha1.InstallMode
	for _, t := range allInstallModes {
		s := false
		for _, m := range supported {
			s = s || m == t
		}
		out = append(out, operatorsv1alpha1.InstallMode{Type: t, Supported: s})
	}
	return out
}

func TestChooseInstallMode(t *testing.T) {
	const (
		all    = operatorsv1alpha1.InstallModeTypeAllNamespaces
		own    = operatorsv1alpha1.InstallModeTypeOwnNamespace
		single = operatorsv1alpha1.InstallModeTypeSingleNamespace
		multi  = operatorsv1alpha1.InstallModeTypeMultiNamespace
	)
	for _, tc := range []struct {
		name      string
		csv       []operatorsv1alpha1.InstallMode
		watch     []string
		want      InstallMode
		describe  string
		reason    string
		errSubstr []string
	}{
		{name: "unset, every mode: AllNamespaces", csv: modes(all, own, single, multi),
			want: InstallMode{Type: all, Defaulted: true}, describe: "install mode AllNamespaces (default)"},
		{name: "empty list is unset", csv: modes(all), watch: []string{},
			want: InstallMode{Type: all, Defaulted: true}, describe: "install mode AllNamespaces (default)"},
		{name: "unset, OwnNamespace only: OwnNamespace", csv: modes(own),
			want: InstallMode{Type: own, Targets: []string{"ops"}, Defaulted: true}, describe: "install mode OwnNamespace (default, watching ops)"},
		{name: "unset, Own+SingleNamespace: OwnNamespace", csv: modes(own, single),
			want: InstallMode{Type: own, Targets: []string{"ops"}, Defaulted: true}, describe: "install mode OwnNamespace (default, watching ops)"},
		{name: "unset, All+Own: AllNamespaces", csv: modes(all, own),
			want: InstallMode{Type: all, Defaulted: true}, describe: "install mode AllNamespaces (default)"},
		{name: "unset, SingleNamespace only: names the value", csv: modes(single), reason: ReasonUnsupportedInstallMode,
			errSubstr: []string{`ClusterServiceVersion "op.v1" supports neither AllNamespaces nor OwnNamespace`,
				`set spec.config.watchNamespaces (Operator: spec.watchNamespaces) to ["<a namespace other than ops>"] for SingleNamespace`}},
		{name: "unset, Single+MultiNamespace: names both values", csv: modes(single, multi), reason: ReasonUnsupportedInstallMode,
			errSubstr: []string{`to ["<a namespace other than ops>"] for SingleNamespace or to ["<ns1>", "<ns2>", ...] for MultiNamespace`}},
		{name: "unset, MultiNamespace only", csv: modes(multi), reason: ReasonUnsupportedInstallMode,
			errSubstr: []string{`(Operator: spec.watchNamespaces) to ["<ns1>", "<ns2>", ...] for MultiNamespace`}},
		{name: "install namespace: OwnNamespace", csv: modes(own, single), watch: []string{"ops"},
			want: InstallMode{Type: own, Targets: []string{"ops"}}, describe: "install mode OwnNamespace (watching ops)"},
		{name: "other namespace: SingleNamespace", csv: modes(own, single), watch: []string{"team-a"},
			want: InstallMode{Type: single, Targets: []string{"team-a"}}, describe: "install mode SingleNamespace (watching team-a)"},
		{name: "several: MultiNamespace, sorted, without repeats", csv: modes(multi), watch: []string{"b", "a", "b"},
			want: InstallMode{Type: multi, Targets: []string{"a", "b"}}, describe: "install mode MultiNamespace (watching a, b)"},
		{name: `[""]: AllNamespaces, explicitly`, csv: modes(all), watch: []string{""},
			want: InstallMode{Type: all}, describe: "install mode AllNamespaces"},
		{name: `[""] without AllNamespaces`, csv: modes(own), watch: []string{""}, reason: ReasonUnsupportedInstallMode,
			errSubstr: []string{`install mode AllNamespaces (spec.config.watchNamespaces [""]) is not supported`, "it supports OwnNamespace (omit watchNamespaces or set it to [ops])"}},
		{name: "SingleNamespace not supported", csv: modes(all, own), watch: []string{"team-a"}, reason: ReasonUnsupportedInstallMode,
			errSubstr: []string{"install mode SingleNamespace", "it supports AllNamespaces (omit watchNamespaces), OwnNamespace (watchNamespaces: [ops])"}},
		{name: "mixing all with names", csv: modes(all), watch: []string{"", "a"}, reason: ReasonInvalidConfiguration,
			errSubstr: []string{`mixes ""`}},
		{name: "nothing supported", csv: modes(), reason: ReasonInvalidBundle, errSubstr: []string{"supports no install mode"}},
		{name: "unknown type", csv: []operatorsv1alpha1.InstallMode{{Type: "OwnNamespacejl", Supported: true}}, reason: ReasonInvalidBundle,
			errSubstr: []string{`install mode "OwnNamespacejl"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseInstallMode("op.v1", tc.csv, "ops", tc.watch)
			if tc.reason != "" {
				wantInvalid(t, err, tc.reason, tc.errSubstr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ChooseInstallMode = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.describe {
				t.Errorf("String() = %q, want %q", got.String(), tc.describe)
			}
		})
	}
}

func renderSprockets(t *testing.T, cfg *rukpakv1alpha1.BundleConfig, edits ...func(map[string]string)) (provisioner.Result, error) {
	t.Helper()
	content := bundleFS(t, sprockets, func(f map[string]string) {
		for _, e := range edits {
			e(f)
		}
	})
	return provisioner.RenderDescribed(context.Background(), New(selfSigned),
		provisioner.Request{Content: content, Name: "bd", InstallNamespace: sprocketsNS, Config: cfg})
}

// TestInstallModeDefaultRender renders an OwnNamespace+SingleNamespace bundle without
// watchNamespaces: it installs in OwnNamespace, exactly as with watchNamespaces: [install namespace],
// and says so in the description.
func TestInstallModeDefaultRender(t *testing.T) {
	res, err := renderSprockets(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Description != "install mode OwnNamespace (default, watching "+sprocketsNS+")" {
		t.Errorf("Description %q", res.Description)
	}
	r := newRendered(t, res.Objects)
	d := r.get("Deployment " + sprocketsNS + "/sprocket-operator.v0.3.1")
	if got := str(d, "spec", "template", "metadata", "annotations", TargetNamespacesAnnotation); got != sprocketsNS {
		t.Errorf("%s = %q, want the install namespace", TargetNamespacesAnnotation, got)
	}
	if got := r.names("Role"); !reflect.DeepEqual(got, []string{sprocketsNS + "/bd-sprocket-operator"}) {
		t.Errorf("Roles %v", got)
	}
	if r.has("ClusterRole /bd-sprocket-operator") {
		t.Errorf("permissions rendered as a ClusterRole in OwnNamespace mode")
	}
	explicit, err := renderSprockets(t, watch(sprocketsNS))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(explicit.Objects, res.Objects) {
		t.Errorf("the default differs from watchNamespaces: [%s]", sprocketsNS)
	}
	if explicit.Description != "install mode OwnNamespace (watching "+sprocketsNS+")" {
		t.Errorf("Description %q", explicit.Description)
	}

	single, err := renderSprockets(t, watch("team-a"))
	if err != nil {
		t.Fatal(err)
	}
	if single.Description != "install mode SingleNamespace (watching team-a)" {
		t.Errorf("Description %q", single.Description)
	}

	// A bundle supporting AllNamespaces still defaults to it.
	all, err := provisioner.RenderDescribed(context.Background(), New(selfSigned),
		provisioner.Request{Content: fixtureFS(t, nil), Name: "bd", InstallNamespace: fixtureNS})
	if err != nil || all.Description != "install mode AllNamespaces (default)" {
		t.Errorf("widgets without watchNamespaces: %q, %v", all.Description, err)
	}

	// SingleNamespace only: nothing to default to; the message names the value to set.
	_, err = renderSprockets(t, nil, editFile(t, sprocketCSV, "- type: OwnNamespace\n    supported: true", "- type: OwnNamespace\n    supported: false"))
	wantInvalid(t, err, ReasonUnsupportedInstallMode, `registry+v1 bundle: spec.config.watchNamespaces is unset and ClusterServiceVersion "sprockets.v0.3.1" supports neither AllNamespaces nor OwnNamespace`,
		`set spec.config.watchNamespaces (Operator: spec.watchNamespaces) to ["<a namespace other than sprockets-system>"] for SingleNamespace`)
	// The Render of the Describer and RenderDescribed agree.
	objs, err := New(selfSigned).Render(context.Background(), provisioner.Request{Content: bundleFS(t, sprockets, nil), Name: "bd", InstallNamespace: sprocketsNS})
	if err != nil || !reflect.DeepEqual(objs, res.Objects) {
		t.Errorf("Render and RenderDescribed differ (%v)", err)
	}
}

// TestConversionWebhookNeedsAllNamespaces: a conversion webhook serves every namespace, so a CSV
// with one must support AllNamespaces; one that does not is the author's to fix, whatever the mode.
func TestConversionWebhookNeedsAllNamespaces(t *testing.T) {
	conversion := "  webhookdefinitions:\n  - type: ConversionWebhook\n    generateName: csprocket.example.com\n    deploymentName: sprocket-operator.v0.3.1\n" +
		"    containerPort: 443\n    targetPort: 9443\n    admissionReviewVersions: [v1]\n    sideEffects: None\n    webhookPath: /convert\n    conversionCRDs: [sprockets.example.com]\n"
	for _, w := range [][]string{nil, {sprocketsNS}, {"team-a"}} {
		_, err := renderSprockets(t, watch(w...), editFile(t, sprocketCSV, "  webhookdefinitions:\n", conversion))
		wantInvalid(t, err, ReasonInvalidBundle, `ClusterServiceVersion "sprockets.v0.3.1" has a conversion webhook (csprocket.example.com)`,
			"does not support the AllNamespaces install mode", "the bundle must be fixed by its author")
	}
}
