package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deppyClusterOutput is what `deppy resolve --kubeconfig -o json` prints.
type deppyClusterOutput struct {
	Catalogs  []string `json:"catalogs"`
	Operators []struct {
		Name      string `json:"name"`
		Package   string `json:"package"`
		Installed *struct {
			Bundle  string `json:"bundle"`
			Version string `json:"version"`
		} `json:"installed"`
		Resolved bool `json:"resolved"`
		Bundle   *struct {
			Name         string `json:"name"`
			Version      string `json:"version"`
			Catalog      string `json:"catalog"`
			Image        string `json:"image"`
			Dependencies []struct {
				Package  string `json:"package"`
				Version  string `json:"version"`
				Operator string `json:"operator"`
			} `json:"dependencies"`
		} `json:"bundle"`
		Message          string `json:"message"`
		UpgradeAvailable *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Catalog string `json:"catalog"`
		} `json:"upgradeAvailable"`
	} `json:"operators"`
}

// runDeppy runs the built bin/deppy and returns stdout, stderr and its exit code.
func runDeppy(ctx context.Context, args ...string) (string, string, int) {
	binDir := os.Getenv("E2E_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(env.repoRoot, "bin")
	}
	bin := filepath.Join(binDir, "deppy")
	if _, err := os.Stat(bin); err != nil {
		Fail(fmt.Sprintf("%s not found: run `make build` first (%v)", bin, err))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	fmt.Fprintf(GinkgoWriter, "$ deppy %s\n", strings.Join(args, " "))
	err := cmd.Run()
	fmt.Fprintf(GinkgoWriter, "%s%s", out.String(), errOut.String())
	code := 0
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	return out.String(), errOut.String(), code
}

var _ = Describe("deppy resolve --kubeconfig", Label("deppy-cluster"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c = newClient(env.cfg)
	})

	createCatalog := func(ctx context.Context, name, label, ref string) {
		catalogs := dc.Resource(catalogGVR)
		_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"olmv1.io/deppy-e2e": label}},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, name, metav1.DeleteOptions{}) })
		waitCondition(ctx, c, catalogNamed(name), "Serving", "True", 2*time.Minute, anyGeneration())
	}

	createOperator := func(ctx context.Context, name string, spec map[string]any) {
		ops := dc.Resource(operatorGVR)
		_, err := ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = ops.Delete(ctx, name, metav1.DeleteOptions{})
			Eventually(func() bool {
				_, err := ops.Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "Operator %s is deleted", name)
		})
	}

	waitBundleDeploymentVersion := func(ctx context.Context, name, version string) {
		Eventually(func(g Gomega) {
			bd, err := dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bd.GetAnnotations()).To(HaveKeyWithValue("operators.operatorframework.io/bundle-version", version))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}

	It("decides for every Operator what operator-controller decides", func(ctx SpecContext) {
		img := map[string]string{
			"0.1.0": pushBundleAs(ctx, "0.1.0", "deppy-cluster:0.1.0"),
			"0.2.0": pushBundleAs(ctx, "0.2.0", "deppy-cluster:0.2.0"),
		}
		missingAPI := gvkProperty("olm.gvk.required", "missing.example.olmv1.io", "v1", "Nothing")
		needsFresh := fbcProperty{Type: "olm.package.required", Value: map[string]string{"packageName": "deppy-fresh", "versionRange": ">=0.1.0"}}
		main := newFixtureCatalog()
		for _, pkg := range []string{"deppy-fresh", "deppy-manual"} {
			main.Package(pkg, "stable").Channel(pkg, "stable", "0.1.0", "0.2.0").Bundle(pkg, "0.1.0", img["0.1.0"]).Bundle(pkg, "0.2.0", img["0.2.0"])
		}
		main.SingleBundlePackage("deppy-needs-api", "1.0.0", img["0.1.0"], missingAPI).
			SingleBundlePackage("deppy-needs-fresh", "1.0.0", img["0.1.0"], needsFresh)
		extra := newFixtureCatalog().SingleBundlePackage("deppy-extra", "1.0.0", img["0.1.0"])

		By("two Catalogs: main and extra, labelled olmv1.io/deppy-e2e")
		createCatalog(ctx, "deppy-main", "main", main.Push(ctx, "deppy-main", "v1"))
		createCatalog(ctx, "deppy-extra", "extra", extra.Push(ctx, "deppy-extra", "v1"))

		By("an Operator with an installed older version whose upgrade awaits approval (Manual)")
		// upgradeScope AnyVersion: the approval offered is 0.1.0 → 0.2.0, across a 0.x minor.
		createOperator(ctx, "deppy-manual", map[string]any{"packageName": "deppy-manual", "version": "0.1.0", "upgradePolicy": "Manual", "upgradeScope": "AnyVersion"})
		waitBundleDeploymentVersion(ctx, "deppy-manual", "0.1.0")
		_, err := dc.Resource(operatorGVR).Patch(ctx, "deppy-manual", types.MergePatchType, []byte(`{"spec":{"version":""}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("Operators that resolve (one with a dependency, one from the catalog its selector picks) and one that cannot")
		createOperator(ctx, "deppy-fresh", map[string]any{"packageName": "deppy-fresh"})
		createOperator(ctx, "deppy-dependent", map[string]any{"packageName": "deppy-needs-fresh"})
		createOperator(ctx, "deppy-broken", map[string]any{"packageName": "deppy-needs-api"})
		createOperator(ctx, "deppy-extra", map[string]any{"packageName": "deppy-extra",
			"catalogSelector": map[string]any{"matchLabels": map[string]any{"olmv1.io/deppy-e2e": "extra"}}})

		By("waiting until operator-controller has reconciled them")
		waitCondition(ctx, c, operatorNamed("deppy-manual"), "UpgradeAvailable", "True", 2*time.Minute)
		waitBundleDeploymentVersion(ctx, "deppy-fresh", "0.2.0")
		for _, name := range []string{"deppy-manual", "deppy-fresh", "deppy-dependent", "deppy-extra"} {
			waitCondition(ctx, c, operatorNamed(name), "Resolved", "True", 2*time.Minute)
		}
		waitCondition(ctx, c, operatorNamed("deppy-broken"), "Resolved", "False", 2*time.Minute, withMessage("missing.example.olmv1.io/v1 Nothing"))

		By("deppy resolve --kubeconfig (with the kubeconfig's current context named) agrees with every Operator's status")
		kc, err := clientcmd.LoadFromFile(env.kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		var out deppyClusterOutput
		Eventually(func(g Gomega) {
			out = deppyAgrees(ctx, g, dc, "--context", kc.CurrentContext)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(out.Catalogs).To(ContainElements("deppy-main", "deppy-extra"))
		decided := map[string]string{}
		for _, o := range out.Operators {
			switch {
			case o.Bundle != nil && o.UpgradeAvailable != nil:
				decided[o.Name] = fmt.Sprintf("%s from %s, %s awaits approval", o.Bundle.Name, o.Bundle.Catalog, o.UpgradeAvailable.Version)
			case o.Bundle != nil:
				decided[o.Name] = fmt.Sprintf("%s from %s", o.Bundle.Name, o.Bundle.Catalog)
				for _, dep := range o.Bundle.Dependencies {
					decided[o.Name] += fmt.Sprintf(", needs %s@%s from Operator %s", dep.Package, dep.Version, dep.Operator)
				}
			default:
				decided[o.Name] = "not resolved"
			}
		}
		Expect(decided).To(HaveKeyWithValue("deppy-manual", "deppy-manual.v0.1.0 from deppy-main, 0.2.0 awaits approval"))
		Expect(decided).To(HaveKeyWithValue("deppy-fresh", "deppy-fresh.v0.2.0 from deppy-main"))
		Expect(decided).To(HaveKeyWithValue("deppy-dependent", "deppy-needs-fresh.v1.0.0 from deppy-main, needs deppy-fresh@0.2.0 from Operator deppy-fresh"))
		Expect(decided).To(HaveKeyWithValue("deppy-extra", "deppy-extra.v1.0.0 from deppy-extra"))
		Expect(decided).To(HaveKeyWithValue("deppy-broken", "not resolved"))

		By("the table names the same bundles, what fails and the upgrade that awaits approval")
		// INSTALLED is what the BundleDeployment names: operator-controller writes it before it
		// reports Resolved=True.
		table, _, code := runDeppy(ctx, "resolve", "--kubeconfig", env.kubeconfig)
		Expect(code).To(Equal(1))
		Expect(table).To(MatchRegexp(`(?m)^deppy-manual\s+deppy-manual\s+0\.1\.0\s+deppy-manual\.v0\.1\.0\s+0\.1\.0\s+deppy-main\s+-$`))
		Expect(table).To(MatchRegexp(`(?m)^deppy-dependent\s+deppy-needs-fresh\s+1\.0\.0\s+deppy-needs-fresh\.v1\.0\.0\s+1\.0\.0\s+deppy-main\s+deppy-fresh@0\.2\.0$`))
		Expect(table).To(MatchRegexp(`(?m)^deppy-broken\s+deppy-needs-api\s+-\s+\(not resolved\)`))
		Expect(table).To(ContainSubstring("  deppy-broken: " + out.Operators[indexOf(out, "deppy-broken")].Message))
		Expect(table).To(ContainSubstring(`  deppy-manual: version 0.2.0 (bundle deppy-manual.v0.2.0 from catalog "deppy-main")`))

		By("--catalog-selector reads only the selected catalogs: the Operator selecting the other one has none left")
		selected, _, code := runDeppy(ctx, "resolve", "--kubeconfig", env.kubeconfig, "--catalog-selector", "olmv1.io/deppy-e2e=main", "-o", "json")
		Expect(code).To(Equal(1))
		var sel deppyClusterOutput
		Expect(json.Unmarshal([]byte(selected), &sel)).To(Succeed())
		Expect(sel.Catalogs).To(Equal([]string{"deppy-main"}))
		e := sel.Operators[indexOf(sel, "deppy-extra")]
		Expect(e.Resolved).To(BeFalse())
		Expect(e.Message).To(ContainSubstring("spec.catalogSelector matches no serving Catalog"))
		Expect(sel.Operators[indexOf(sel, "deppy-fresh")].Bundle.Name).To(Equal("deppy-fresh.v0.2.0"))
	})
})

func indexOf(out deppyClusterOutput, name string) int {
	for i, o := range out.Operators {
		if o.Name == name {
			return i
		}
	}
	Fail("deppy does not list Operator " + name)
	return -1
}

// deppyAgrees runs deppy resolve --kubeconfig with args and checks that, for every Operator of
// the cluster (not being deleted), it decides what operator-controller's status says: the
// resolved bundle and its dependencies, or the Resolved condition's message; the upgrade a
// Manual Operator awaits; the installed version its BundleDeployment names.
func deppyAgrees(ctx context.Context, g Gomega, dc dynamic.Interface, args ...string) deppyClusterOutput {
	stdout, stderr, code := runDeppy(ctx, append([]string{"resolve", "--kubeconfig", env.kubeconfig, "-o", "json"}, args...)...)
	g.Expect(code).To(Or(Equal(0), Equal(1)), "stderr: %s", stderr)
	var out deppyClusterOutput
	g.Expect(json.Unmarshal([]byte(stdout), &out)).To(Succeed(), stdout)
	byName := map[string]int{}
	for i, o := range out.Operators {
		byName[o.Name] = i
	}
	list, err := dc.Resource(operatorGVR).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	allResolved := true
	for i := range list.Items {
		op := &list.Items[i]
		if op.GetDeletionTimestamp() != nil {
			continue
		}
		idx, ok := byName[op.GetName()]
		g.Expect(ok).To(BeTrue(), "deppy lists Operator %s", op.GetName())
		d := out.Operators[idx]
		resolved := findCondition(op, "Resolved")
		g.Expect(resolved).NotTo(BeNil())
		g.Expect(resolved["observedGeneration"]).To(BeEquivalentTo(op.GetGeneration()), "Operator %s is reconciled", op.GetName())
		message, _ := resolved["message"].(string)
		if resolved["status"] == "True" {
			// The string fields of resolvedBundle (its properties are a list).
			rbAll, _, _ := unstructured.NestedMap(op.Object, "status", "resolvedBundle")
			rb := map[string]string{}
			for k, v := range rbAll {
				if s, ok := v.(string); ok {
					rb[k] = s
				}
			}
			g.Expect(d.Resolved).To(BeTrue(), "Operator %s: operator-controller resolved %v, deppy says %q", op.GetName(), rb, d.Message)
			g.Expect(d.Bundle.Name).To(Equal(rb["name"]), op.GetName())
			g.Expect(d.Bundle.Version).To(Equal(rb["version"]), op.GetName())
			g.Expect(d.Bundle.Catalog).To(Equal(rb["catalog"]), op.GetName())
			g.Expect(d.Bundle.Image).To(Equal(rb["source"]), op.GetName())
			deps, _, _ := unstructured.NestedSlice(op.Object, "status", "dependencies")
			var want, got []string
			for _, dep := range deps {
				m := dep.(map[string]any)
				want = append(want, fmt.Sprintf("%v@%v by %v", m["package"], m["version"], m["operator"]))
			}
			for _, dep := range d.Bundle.Dependencies {
				if s := fmt.Sprintf("%s@%s by %s", dep.Package, dep.Version, dep.Operator); dep.Operator != "" && !slices.Contains(got, s) {
					got = append(got, s)
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			g.Expect(got).To(Equal(want), "Operator %s: dependencies", op.GetName())
		} else {
			allResolved = false
			g.Expect(resolved["status"]).To(Equal("False"), op.GetName())
			g.Expect(d.Resolved).To(BeFalse(), "Operator %s: operator-controller says %q, deppy resolves %+v", op.GetName(), message, d.Bundle)
			// operator-controller adds which installed bundle stays installed.
			g.Expect(message).To(HavePrefix(d.Message), op.GetName())
		}
		if c := findCondition(op, "UpgradeAvailable"); c != nil && c["reason"] == "AwaitingApproval" {
			g.Expect(d.UpgradeAvailable).NotTo(BeNil(), "Operator %s: %v", op.GetName(), c["message"])
			g.Expect(c["message"]).To(ContainSubstring(fmt.Sprintf("version %s (bundle %s from catalog %q)",
				d.UpgradeAvailable.Version, d.UpgradeAvailable.Name, d.UpgradeAvailable.Catalog)))
		} else {
			g.Expect(d.UpgradeAvailable).To(BeNil(), "Operator %s: no upgrade awaits approval", op.GetName())
		}
		bd, err := dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, op.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			g.Expect(d.Installed).To(BeNil(), op.GetName())
		} else {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Installed).NotTo(BeNil(), op.GetName())
			g.Expect(d.Installed.Version).To(Equal(bd.GetAnnotations()["operators.operatorframework.io/bundle-version"]), op.GetName())
		}
	}
	g.Expect(out.Operators).To(HaveLen(len(list.Items)), "one entry per Operator")
	if allResolved {
		g.Expect(code).To(Equal(0))
	} else {
		g.Expect(code).To(Equal(1), "exit status 1 when an Operator is not resolved")
	}
	return out
}
