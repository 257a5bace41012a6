package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// resolutionPackages are the community-v4.20 packages the benchmark's Operators name: a small one,
// the largest (opendatahub-operator) and three others.
var resolutionPackages = []string{"kube-green", "opendatahub-operator", "rabbitmq-cluster-operator", "infinispan", "kepler-operator"}

// BenchmarkOperatorControllerLargeCatalogs measures what operator-controller holds to resolve five
// Operators while catalogd serves five community-v4.20 catalogs (about 100 MB of FBC): its peak and
// current RSS after every Operator is Resolved, and how long that took from a restarted
// operator-controller. rukpak is stopped meanwhile, so the community bundle images (quay.io) are never
// pulled. Compare with BENCH_OPERATOR_CONTROLLER_ARGS=--read-whole-catalogs (every blob of every
// catalog read, as before operator-controller read only the packages it needs).
func BenchmarkOperatorControllerLargeCatalogs(b *testing.B) {
	setup(b)
	serveCatalogs(b, 5)
	ctx := context.Background()
	oc, restartRukpak := stopRukpak(ctx, b)
	defer func() { restartRukpak() }()
	for i := 0; i < b.N; i++ {
		if i > 0 {
			oc, restartRukpak = stopRukpak(ctx, b) // started for the previous round's deletions
		}
		// A fresh operator-controller: its peak RSS is this round's.
		if err := oc.KillAndRestart(ctx, 2*time.Minute); err != nil {
			b.Fatal(err)
		}
		idle := procStatusMB(oc.PID, "VmRSS")
		start := time.Now()
		for _, pkg := range resolutionPackages {
			createOperator(ctx, b, "res-"+pkg, pkg)
		}
		if err := waitOperatorsResolved(ctx, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.ReportMetric(elapsed.Seconds(), "resolved-s")
		b.ReportMetric(idle, "oc-idle-rss-MB")
		b.ReportMetric(procStatusMB(oc.PID, "VmRSS"), "oc-rss-MB")
		b.ReportMetric(procStatusMB(oc.PID, "VmHWM"), "oc-peak-rss-MB")
		b.ReportMetric(procStatusMB(oc.PID, "RssAnon"), "oc-anon-MB")
		deleteOperatorsRukpakStopped(ctx, b, "res", resolutionPackages, restartRukpak)
	}
}

// procStatusMB is a /proc/<pid>/status field in MB (0 when unknown).
func procStatusMB(pid int, field string) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, field+": %f kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return 0
}

func createOperator(ctx context.Context, b *testing.B, name, pkg string) {
	b.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"packageName": pkg},
	}}
	if _, err := olm.dc.Resource(operatorGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// waitOperatorsResolved waits until every benchmark Operator is Resolved=True; an Operator whose
// resolution failed (Resolved=False with a reason other than in-progress ones) fails at once.
func waitOperatorsResolved(ctx context.Context, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, pkg := range resolutionPackages {
			op, err := olm.dc.Resource(operatorGVR).Get(ctx, "res-"+pkg, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !conditionTrue(op, "Resolved") {
				last = fmt.Sprintf("Operator res-%s: %v", pkg, op.Object["status"])
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w; last: %s", err, last)
	}
	return nil
}
