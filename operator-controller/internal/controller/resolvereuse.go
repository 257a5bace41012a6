package controller

import (
	"reflect"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
)

// outcomesStillHold reports whether outcomes, resolved for the requests base, still answer reqs:
// the same Operators asking the same, except that some have since installed the very bundle their
// outcome chose (their BundleDeployment was created or moved to it). Resolving again would choose
// the same: each chosen bundle stays allowed (an installed bundle may always stay installed) and an
// installed bundle only narrows what else is allowed. Without this, installing n Operators resolved
// all of them again after each BundleDeployment was written: n resolutions of n Operators.
//
// Anything else (an Operator added, removed or changed, an installed bundle other than the chosen
// one, one uninstalled since base) needs a resolution.
func outcomesStillHold(base, reqs []operators.Request, outcomes map[string]operators.Outcome) bool {
	if outcomes == nil || len(base) != len(reqs) {
		return false
	}
	byName := make(map[string]*operators.Request, len(base))
	for i := range base {
		byName[base[i].Name] = &base[i]
	}
	for _, r := range reqs {
		b, ok := byName[r.Name]
		if !ok {
			return false
		}
		if r.Installed != nil && b.Installed == nil {
			chosen := outcomes[r.Name].Bundle
			if chosen == nil || chosen.Name != r.Installed.BundleName {
				return false
			}
			r.Installed = nil // r is a copy
		}
		if !reflect.DeepEqual(r, *b) {
			return false
		}
	}
	return true
}
