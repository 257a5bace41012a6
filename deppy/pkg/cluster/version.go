package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// ClusterVersionGVR is OpenShift's ClusterVersion (config.openshift.io/v1); its object "version"
// names the OpenShift version. It exists only on OpenShift.
var ClusterVersionGVR = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

// ReadClusterVersion reads the cluster's Kubernetes version from discovery (ServerVersion) and, on
// OpenShift (ClusterVersion "version" exists), its OpenShift version. dc may be nil: the OpenShift
// version is then not read. On plain Kubernetes OpenShiftVersion is "", and
// olm.maxOpenShiftVersion is not checked.
func ReadClusterVersion(ctx context.Context, disc discovery.DiscoveryInterface, dc dynamic.Interface) (*olm.Cluster, error) {
	info, err := disc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's version (discovery /version): %w", err)
	}
	c := &olm.Cluster{KubeVersion: info.GitVersion}
	if dc == nil {
		return c, nil
	}
	cv, err := dc.Resource(ClusterVersionGVR).Get(ctx, "version", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return c, nil // not OpenShift
	case err != nil:
		return c, fmt.Errorf("reading OpenShift's ClusterVersion %q: %w", "version", err)
	}
	c.OpenShiftVersion = openShiftVersion(cv)
	return c, nil
}

// openShiftVersion is the version of the last completed update in a ClusterVersion's history, else
// its desired version.
func openShiftVersion(cv *unstructured.Unstructured) string {
	history, _, _ := unstructured.NestedSlice(cv.Object, "status", "history")
	for _, h := range history {
		if m, ok := h.(map[string]interface{}); ok && m["state"] == "Completed" {
			if v, ok := m["version"].(string); ok && v != "" {
				return v
			}
		}
	}
	v, _, _ := unstructured.NestedString(cv.Object, "status", "desired", "version")
	return v
}

// VersionCache keeps the cluster's version read by Read, and reads it again when it is older than
// TTL: a cluster upgrade is seen within TTL, and resolution costs no request in between.
type VersionCache struct {
	Read func(context.Context) (*olm.Cluster, error)
	TTL  time.Duration

	mu   sync.Mutex
	last *olm.Cluster
	at   time.Time
}

// Get returns the cached version, reading it when it is missing or older than TTL. When a read
// fails, the last version read is kept (nil before the first success: nothing is checked).
func (v *VersionCache) Get(ctx context.Context) (*olm.Cluster, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.last != nil && time.Since(v.at) < v.TTL {
		return v.last, nil
	}
	c, err := v.Read(ctx)
	if err != nil {
		return v.last, err
	}
	v.last, v.at = c, time.Now()
	return c, nil
}
