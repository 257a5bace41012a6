package bundlevalidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	csvFile = "manifests/widget-operator.clusterserviceversion.yaml"
	crdFile = "manifests/widgets.example.com.crd.yaml"
)

// copyGood copies testdata/good into a temporary directory and applies edits: file -> old -> new
// (old "" replaces the whole file; new "" with old "" deletes it).
func copyGood(t *testing.T, edits []edit) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("testdata/good", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/good", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(dst, filepath.FromSlash(e.file))
		if e.old == "" {
			if e.new == "" {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(p, []byte(e.new), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), e.old) {
			t.Fatalf("fixture edit: %s does not contain %q", e.file, e.old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), e.old, e.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

type edit struct{ file, old, new string }

// want is one expected problem: file and field exactly, message and fix by substring.
type want struct{ file, field, message, fix string }

func TestValidateGoodBundleIsClean(t *testing.T) {
	r, err := Validate("testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 {
		t.Fatalf("want no problems, got:\n%s", problemLines(r))
	}
	if r.Format != FormatRegistryV1 || r.Package != "widget-operator" || r.Name != "widget-operator.v1.2.0" || r.Version != "1.2.0" {
		t.Fatalf("report = %+v", r)
	}
}

// TestValidateFindsEachClassOfMistake: one mistake per case, each reported as one error line naming
// file, field, what is wrong and how to fix it, and nothing else reported as an error.
func TestValidateFindsEachClassOfMistake(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits []edit
		want  []want
	}{{
		name:  "misspelled install mode",
		edits: []edit{{csvFile, "{type: OwnNamespace, supported: true}", "{type: OwnNamespacejl, supported: true}"}},
		want:  []want{{csvFile, "spec.installModes[0].type", `"OwnNamespacejl" is not an install mode`, "did you mean OwnNamespace?"}},
	}, {
		name: "no install mode supported",
		edits: []edit{
			{csvFile, "{type: OwnNamespace, supported: true}", "{type: OwnNamespace, supported: false}"},
			{csvFile, "{type: SingleNamespace, supported: true}", "{type: SingleNamespace, supported: false}"},
			{csvFile, "{type: AllNamespaces, supported: true}", "{type: AllNamespaces, supported: false}"},
		},
		want: []want{{csvFile, "spec.installModes", "no install mode has supported: true", "AllNamespaces"}},
	}, {
		name:  "install mode listed twice",
		edits: []edit{{csvFile, "{type: MultiNamespace, supported: false}", "{type: OwnNamespace, supported: false}"}},
		want:  []want{{csvFile, "spec.installModes[2].type", "install mode OwnNamespace is listed twice", "one entry per install mode"}},
	}, {
		name:  "owned CRD missing from manifests",
		edits: []edit{{crdFile, "", ""}},
		want:  []want{{csvFile, "spec.customresourcedefinitions.owned[0].name", `owned CRD "widgets.example.com" is not in manifests/`, "add the CustomResourceDefinition"}},
	}, {
		name:  "owned CRD version not served",
		edits: []edit{{csvFile, "        version: v1\n", "        version: v2\n"}},
		want:  []want{{csvFile, "spec.customresourcedefinitions.owned[0].version", `is "v2" but CRD "widgets.example.com"`, "name one of the CRD's versions"}},
	}, {
		name:  "deployment runs as an account RBAC does not create",
		edits: []edit{{csvFile, "serviceAccountName: widget-operator\n                containers", "serviceAccountName: widget-operater\n                containers"}},
		want: []want{{csvFile, "spec.install.spec.deployments[0].spec.template.spec.serviceAccountName",
			`deployment "widget-operator" runs as service account "widget-operater"`, "the rules are granted to widget-operator"}},
	}, {
		name:  "webhook names a missing deployment",
		edits: []edit{{csvFile, "deploymentName: widget-operator", "deploymentName: widget-webhook"}},
		want:  []want{{csvFile, "spec.webhookdefinitions[0].deploymentName", `deployment "widget-webhook", which is not in spec.install.spec.deployments`, "set deploymentName"}},
	}, {
		name:  "admission webhook without sideEffects",
		edits: []edit{{csvFile, "      sideEffects: None\n", ""}},
		want:  []want{{csvFile, "spec.webhookdefinitions[0].sideEffects", "missing", "None or NoneOnDryRun"}},
	}, {
		name:  "conversion webhook for a CRD the CSV does not own",
		edits: []edit{{csvFile, "type: ValidatingAdmissionWebhook", "type: ConversionWebhook\n      conversionCRDs: [gadgets.example.com]"}},
		want:  []want{{csvFile, "spec.webhookdefinitions[0].conversionCRDs[0]", `CRD "gadgets.example.com" is not owned by the CSV`, "spec.customresourcedefinitions.owned"}},
	}, {
		name:  "unknown webhook type",
		edits: []edit{{csvFile, "type: ValidatingAdmissionWebhook", "type: ValidatingWebhook"}},
		want:  []want{{csvFile, "spec.webhookdefinitions[0].type", `"ValidatingWebhook" is not a webhook type`, "ValidatingAdmissionWebhook"}},
	}, {
		name:  "default channel not among the channels",
		edits: []edit{{"metadata/annotations.yaml", "channel.default.v1: stable", "channel.default.v1: candidate"}},
		want: []want{{"metadata/annotations.yaml", "annotations.operators.operatorframework.io.bundle.channel.default.v1",
			`default channel "candidate" is not one of the bundle's channels "stable,fast"`, `add "candidate"`}},
	}, {
		name:  "annotations say plain but the bundle has a CSV",
		edits: []edit{{"metadata/annotations.yaml", "mediatype.v1: registry+v1", "mediatype.v1: plain+v0"}},
		want: []want{{"metadata/annotations.yaml", "annotations.operators.operatorframework.io.bundle.mediatype.v1",
			`is "plain+v0" but the bundle is registry+v1`, "set it to registry+v1"}},
	}, {
		name:  "annotations name a missing manifests directory",
		edits: []edit{{"metadata/annotations.yaml", "manifests.v1: manifests/", "manifests.v1: manifest/"}},
		want: []want{{"metadata/annotations.yaml", "annotations.operators.operatorframework.io.bundle.manifests.v1",
			`names "manifest/", which is not a directory`, "usually manifests/"}},
	}, {
		name:  "CSV name and spec.version disagree",
		edits: []edit{{csvFile, "  version: 1.2.0\n", "  version: 1.2.1\n"}},
		want:  []want{{csvFile, "metadata.name", `CSV name "widget-operator.v1.2.0" says version 1.2.0 but spec.version is 1.2.1`, "<package>.v<spec.version>"}},
	}, {
		name:  "selector does not match the pod template",
		edits: []edit{{csvFile, "matchLabels: {app: widget-operator}", "matchLabels: {app: widget}"}},
		want:  []want{{csvFile, "spec.install.spec.deployments[0].spec.selector.matchLabels.app", "selects app=widget but its pod template has no such label", "spec.template.metadata.labels"}},
	}, {
		name:  "unsupported kind in manifests (found by rukpak's conversion)",
		edits: []edit{{"manifests/job.yaml", "", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\nspec: {template: {spec: {containers: [{name: m, image: x}], restartPolicy: Never}}}\n"}},
		want:  []want{{csvFile, "(conversion, install mode OwnNamespace)", `Job "migrate" (batch/v1) is not a kind a registry+v1 bundle may contain`, ""}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Validate(copyGood(t, tc.edits))
			if err != nil {
				t.Fatal(err)
			}
			// Our own (or, for conversion-only mistakes, rukpak's) errors must be exactly the wanted ones;
			// operator-framework/api may add consequences of the same mistake.
			var errs []Problem
			for _, p := range r.Problems {
				if p.Level == LevelError && p.Source != sourceAPI {
					errs = append(errs, p)
				}
			}
			if r.Valid() {
				t.Fatalf("report is valid, want errors")
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("want %d error(s), got %d:\n%s", len(tc.want), len(errs), problemLines(r))
			}
			for i, w := range tc.want {
				p := errs[i]
				if p.File != w.file || p.Field != w.field || !strings.Contains(p.Message, w.message) || !strings.Contains(p.Fix, w.fix) {
					t.Errorf("problem %d:\n got  %s\n want file=%s field=%s message~%q fix~%q", i, p, w.file, w.field, w.message, w.fix)
				}
				if line := p.String(); strings.Contains(line, "\n") || !strings.HasPrefix(line, w.file+": ") {
					t.Errorf("problem %d is not one line starting with its file: %q", i, line)
				}
			}
		})
	}
}

// TestValidateReportsEveryProblem: mistakes in several places are all reported, not just the first.
func TestValidateReportsEveryProblem(t *testing.T) {
	r, err := Validate(copyGood(t, []edit{
		{csvFile, "{type: OwnNamespace, supported: true}", "{type: OwnNamespacejl, supported: true}"},
		{crdFile, "", ""},
		{csvFile, "deploymentName: widget-operator", "deploymentName: widget-webhook"},
		{"metadata/annotations.yaml", "channel.default.v1: stable", "channel.default.v1: candidate"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors() < 4 || r.Valid() {
		t.Fatalf("want at least 4 errors, got:\n%s", problemLines(r))
	}
	for _, s := range []string{"OwnNamespacejl", "widgets.example.com", "widget-webhook", "candidate"} {
		if !strings.Contains(problemLines(r), s) {
			t.Errorf("no problem mentions %q:\n%s", s, problemLines(r))
		}
	}
	// The misspelled install mode is reported once, though rukpak's conversion also refuses it.
	if n := strings.Count(problemLines(r), "OwnNamespacejl"); n != 1 {
		t.Errorf("OwnNamespacejl reported %d times:\n%s", n, problemLines(r))
	}
}

func TestValidatePlainBundle(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(dir, "manifests", "objs.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	r, err := Validate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != FormatPlain || !r.Valid() {
		t.Fatalf("want a valid plain bundle, got %+v:\n%s", r, problemLines(r))
	}
	write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	r, err = Validate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Valid() || !strings.Contains(problemLines(r), `"a"`) {
		t.Fatalf("want the duplicate object reported, got:\n%s", problemLines(r))
	}
}

// TestValidateRealBundles: every real bundle of ../shared/testdata/bundles has no error. Warnings
// are allowed; the ones expected are explained here.
//   - gitlab-operator-kubernetes grants rules to gitlab-nginx-ingress and gitlab-app-nonroot, accounts
//     its operands run as, not its deployment (warning, as intended); it also uses olm.properties.
//   - operator-framework/api warns about missing minKubeVersion (kubevirt, rabbitmq).
func TestValidateRealBundles(t *testing.T) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "bundles", "*", "*"))
	if len(dirs) == 0 {
		t.Skipf("no real bundles under %s/bundles (set OLMV1_TESTDATA to the shared testdata directory)", root)
	}
	for _, d := range dirs {
		t.Run(filepath.Base(filepath.Dir(d))+"/"+filepath.Base(d), func(t *testing.T) {
			r, err := Validate(d)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Valid() {
				t.Fatalf("want no errors:\n%s", problemLines(r))
			}
			if r.Package == "" || r.Version != filepath.Base(d) {
				t.Fatalf("package %q version %q, want version %s", r.Package, r.Version, filepath.Base(d))
			}
			for _, p := range r.Problems {
				t.Logf("%s", p)
			}
		})
	}
}

func problemLines(r *Report) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	return b.String()
}
