package migrate

import (
	"encoding/json"
	"fmt"
	"strings"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// What blocks a migration, found in OLM v0's objects.

// dependencyBlockers reports the dependencies OLM v0 resolved for the CSV: OLM v1 resolves each
// Operator on its own, so a chain must be moved whole, which migrate does not do.
func dependencyBlockers(st *V0) []string {
	csv := st.CSV
	var deps []string
	for _, r := range csv.Spec.CustomResourceDefinitions.Required {
		deps = append(deps, "CRD "+r.Name)
	}
	for _, r := range csv.Spec.APIServiceDefinitions.Required {
		deps = append(deps, "APIService "+r.Version+"."+r.Group)
	}
	if props := csv.Annotations["operatorframework.io/properties"]; props != "" {
		var p struct {
			Properties []struct {
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		}
		if json.Unmarshal([]byte(props), &p) == nil {
			for _, pr := range p.Properties {
				if pr.Type == "olm.package.required" || pr.Type == "olm.gvk.required" || pr.Type == "olm.constraint" {
					deps = append(deps, pr.Type+" "+string(pr.Value))
				}
			}
		}
	}
	var blockers []string
	if len(deps) > 0 {
		blockers = append(blockers, fmt.Sprintf("CSV %s depends on %s: OLM v0 installed it as part of a dependency chain; install the providers as Operators first (kubectl olmv1 install), or keep this operator on OLM v0",
			csv.Name, strings.Join(deps, ", ")))
	}
	owned := map[string]bool{}
	for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[o.Name] = true
	}
	for _, other := range st.CSVs {
		if other.Name == csv.Name || other.Labels[LabelCopiedFrom] != "" {
			continue
		}
		for _, r := range other.Spec.CustomResourceDefinitions.Required {
			if owned[r.Name] {
				blockers = append(blockers, fmt.Sprintf("CSV %s/%s requires CRD %s that CSV %s provides: moving the provider alone would break it; keep both on OLM v0 for now", other.Namespace, other.Name, r.Name, csv.Name))
			}
		}
	}
	return blockers
}

// unsupportedBlockers reports what OLM v1 cannot take over without changing the running pods.
func unsupportedBlockers(csv *v0.ClusterServiceVersion) []string {
	var out []string
	if len(csv.Spec.APIServiceDefinitions.Owned) > 0 {
		out = append(out, fmt.Sprintf("CSV %s owns APIServices: OLM v1 does not install APIServices; keep this operator on OLM v0", csv.Name))
	}
	return out
}
