package controller

import (
	"reflect"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
)

// outcomesStillHold reports whether outcomes, resolved against idx for the requests base, still
// answer reqs: the same Operators asking the same, except that some have since installed the very
// bundle their outcome chose (their BundleDeployment was created or moved to it). Resolving again
// would choose the same: each chosen bundle stays allowed (an installed bundle may always stay
// installed) and an installed bundle only narrows what else is allowed. Without this, installing n
// Operators resolved all of them again after each BundleDeployment was written: n resolutions of n
// Operators.
//
// An upgrade (the Operator had another bundle installed in base) is the same when nothing in idx
// can upgrade from the chosen bundle (upgradeStillHolds): under policy Enforce the new installed
// bundle then allows only itself, which resolution chose. Otherwise installing it could open a next
// upgrade (1.0 → 1.1 → 1.2 along replaces), and resolution must run again. Without this, one
// catalog update that upgrades n Operators resolved all of them again after each BundleDeployment
// moved: n resolutions of n Operators.
//
// Anything else (an Operator added, removed or changed, an installed bundle other than the chosen
// one, one uninstalled since base) needs a resolution.
func outcomesStillHold(idx *olm.Index, base, reqs []operators.Request, outcomes map[string]operators.Outcome) bool {
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
		if r.Installed != nil && !reflect.DeepEqual(r.Installed, b.Installed) {
			o := outcomes[r.Name]
			if o.Bundle == nil || o.Bundle.Name != r.Installed.BundleName {
				return false
			}
			if b.Installed != nil && (b.Installed.BundleName == r.Installed.BundleName || !upgradeStillHolds(idx, r, o)) {
				return false
			}
			r.Installed = b.Installed // r is a copy
		}
		if !reflect.DeepEqual(r, *b) {
			return false
		}
	}
	return true
}

// upgradeStillHolds reports whether r, which has moved to the bundle its outcome o chose, would
// be resolved to it again: r's upgrades are automatic and edge-bound (policy Enforce, not Manual),
// o held nothing back and skipped nothing, and no bundle of r's package in idx, in any catalog or
// channel, has an upgrade edge from the chosen bundle (replaces, skips or skipRange). Anything it
// cannot tell counts as an edge.
func upgradeStillHolds(idx *olm.Index, r operators.Request, o operators.Outcome) bool {
	if idx == nil || r.Manual || (r.ConstraintPolicy != "" && !strings.EqualFold(string(r.ConstraintPolicy), string(olm.Enforce))) {
		return false
	}
	if o.UpgradeAvailable != nil || o.Waiting != nil || len(o.Skipped) > 0 {
		return false
	}
	chosen := o.Bundle
	v, verr := semver.ParseTolerant(chosen.Version)
	for _, b := range idx.Bundles(r.Package) {
		if b.Name == chosen.Name {
			continue
		}
		for _, e := range b.Edges {
			if e.Replaces == chosen.Name {
				return false
			}
			for _, s := range e.Skips {
				if s == chosen.Name {
					return false
				}
			}
			if e.SkipRange == "" {
				continue
			}
			rng, err := semver.ParseRange(e.SkipRange)
			if err != nil || verr != nil || rng(v) {
				return false
			}
		}
	}
	return true
}
