package main

import "github.com/olmv1/olmv1/deppy/pkg/olm"

// clusterFlags is the cluster of --cluster-version and --openshift-version, nil when neither is set.
func clusterFlags(o *resolveOptions) (*olm.Cluster, error) {
	if o.clusterVersion == "" && o.openShiftVersion == "" {
		return nil, nil
	}
	c := &olm.Cluster{KubeVersion: o.clusterVersion, OpenShiftVersion: o.openShiftVersion}
	if err := c.Validate(); err != nil {
		return nil, usageError{err.Error()}
	}
	return c, nil
}
