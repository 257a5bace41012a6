package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/e2e/chart"
)

var (
	crdGVR               = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	operatorConditionGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v2", Resource: "operatorconditions"}
)

// olmCRDs are the CRDs the chart installs (deploy/charts/olmv1/crds), the current build's and the
// earlier build's together.
var olmCRDs = []string{
	"catalogs.catalogd.operatorframework.io",
	"bundledeployments.core.rukpak.io",
	"operators.operatorframework.io",
	"operatorconditions.operators.coreos.com",
}

// workload is what must not change on an installed operator when OLM is upgraded: its Deployment's
// identity and generation, and every pod's identity, template hash and container restarts.
type workload struct {
	UID        string
	Generation int64
	Pods       []string // "<uid> hash=<pod-template-hash> restarts=<n>", sorted
}

// workloads reads the Deployment of every Operator of ops.
func workloads(ctx context.Context, g Gomega, ops []upgradeOperator) map[string]workload {
	out := map[string]workload{}
	for _, op := range ops {
		d, err := env.clientset.AppsV1().Deployments(op.namespace).Get(ctx, op.deployment, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		w := workload{UID: string(d.UID), Generation: d.Generation}
		sel := metav1.FormatLabelSelector(d.Spec.Selector)
		pods, err := env.clientset.CoreV1().Pods(op.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			restarts := int32(0)
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
			w.Pods = append(w.Pods, fmt.Sprintf("%s hash=%s restarts=%d", p.UID, p.Labels["pod-template-hash"], restarts))
		}
		sort.Strings(w.Pods)
		out[op.namespace+"/"+op.deployment] = w
	}
	return out
}

// expectInstalledAndHealthy checks that every Operator of ops is Installed and Healthy.
func expectInstalledAndHealthy(ctx context.Context, g Gomega, dc dynamic.Interface, ops []upgradeOperator) {
	for _, op := range ops {
		obj, err := dc.Resource(operatorGVR).Get(ctx, op.pkg, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, t := range []string{"Installed", "Healthy"} {
			g.Expect(condition(obj, t)).To(HaveKeyWithValue("status", "True"), "Operator %s: %s", op.pkg, mustJSON(condition(obj, t)))
		}
	}
}

// conditionWatch polls the Operators of ops every 500 ms until stopped and records every time one
// was not Installed and Healthy: an upgrade of OLM must not make an installed operator look broken,
// not even for a moment between two checks of a spec.
type conditionWatch struct {
	mu     sync.Mutex
	seen   []string
	polls  int
	cancel context.CancelFunc
	done   chan struct{}
}

func watchConditions(dc dynamic.Interface, ops []upgradeOperator) *conditionWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &conditionWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, op := range ops {
				obj, err := dc.Resource(operatorGVR).Get(ctx, op.pkg, metav1.GetOptions{})
				if ctx.Err() != nil {
					return
				}
				w.mu.Lock()
				if err != nil {
					w.seen = append(w.seen, fmt.Sprintf("%s: %s: %v", time.Now().Format(time.TimeOnly), op.pkg, err))
				}
				for _, t := range []string{"Installed", "Healthy"} {
					if c := condition(obj, t); err == nil && (c == nil || c["status"] != "True") {
						w.seen = append(w.seen, fmt.Sprintf("%s: %s %s: %v", time.Now().Format(time.TimeOnly), op.pkg, t, c))
					}
				}
				w.mu.Unlock()
			}
			w.mu.Lock()
			w.polls++
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the watch and returns what it saw and how many rounds it polled.
func (w *conditionWatch) stop() ([]string, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen, w.polls
}

// applyChartCRDs applies the CRDs of the chart in chartDir with server-side apply, as
// `kubectl apply --server-side --force-conflicts -f <chart>/crds` does (the first step of the
// documented upgrade, docs/deploy.md), and waits until each is Established.
func applyChartCRDs(ctx SpecContext, dc dynamic.Interface, chartDir string) {
	files, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed(), f)
		_, err = dc.Resource(crdGVR).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "olmv1-upgrade", Force: true})
		Expect(err).NotTo(HaveOccurred(), "applying %s", f)
		waitCondition(ctx, dc.Resource(crdGVR), obj.GetName(), "Established", "True", time.Minute)
	}
}

// deleteOLMCRDs deletes the chart's CRDs and waits until they are gone, so that the earlier chart
// installs its own (Helm leaves CRDs that exist alone). No OLM object may be left by another spec.
func deleteOLMCRDs(ctx SpecContext, dc dynamic.Interface) {
	for _, n := range olmCRDs {
		err := dc.Resource(crdGVR).Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Eventually(func(g Gomega) {
		for _, n := range olmCRDs {
			_, err := dc.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CRD %s is still there", n)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}

// storedVersions maps each OLM CRD that exists to its status.storedVersions.
func storedVersions(ctx context.Context, dc dynamic.Interface) map[string][]string {
	out := map[string][]string{}
	for _, n := range olmCRDs {
		crd, err := dc.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		Expect(err).NotTo(HaveOccurred())
		v, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
		out[n] = v
	}
	return out
}

// olmObjects reads every Catalog, Operator and BundleDeployment, by "<resource>/<name>".
func olmObjects(ctx context.Context, dc dynamic.Interface) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, gvr := range []schema.GroupVersionResource{catalogGVR, operatorGVR, bundleDeploymentGVR} {
		list, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for i := range list.Items {
			out[gvr.Resource+"/"+list.Items[i].GetName()] = &list.Items[i]
		}
	}
	return out
}

// lostFields lists the paths of before's spec and labels that after no longer has, or has with
// another value: what a CRD upgrade that pruned or rewrote fields would show.
func lostFields(before, after *unstructured.Unstructured) []string {
	lost := missingIn("spec", before.Object["spec"], after.Object["spec"])
	lost = append(lost, missingIn("metadata.labels", toAny(before.GetLabels()), toAny(after.GetLabels()))...)
	return lost
}

func toAny(m map[string]string) any {
	if m == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// missingIn lists the paths under path where want has a value that got lacks or differs from.
func missingIn(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: was an object, now %v", path, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, missingIn(path+"."+k, v, g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: was %v, now %v", path, w, got)}
		}
		var out []string
		for i := range w {
			out = append(out, missingIn(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: was %v, now %v", path, want, got)}
		}
		return nil
	}
}

// previousBuild is the directory `make olm-upgrade-prev` filled (E2E_OLM_UPGRADE_PREV).
func previousBuild() string {
	dir := os.Getenv("E2E_OLM_UPGRADE_PREV")
	if dir == "" {
		Fail("E2E_OLM_UPGRADE_PREV is not set: run the real-node tier through make (make test-real-node), which builds the earlier commit's chart and images with `make olm-upgrade-prev`")
	}
	done, err := os.ReadFile(filepath.Join(dir, "done"))
	Expect(err).NotTo(HaveOccurred(), "the earlier build in %s is incomplete: run `make olm-upgrade-prev`", dir)
	fmt.Fprintf(GinkgoWriter, "earlier build: commit %s from %s\n", strings.TrimSpace(string(done)), dir)
	_, err = chart.Load(filepath.Join(dir, "chart"))
	Expect(err).NotTo(HaveOccurred())
	return dir
}
