package olm

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/constraints"
)

// predicate reports whether a bundle satisfies an olm.constraint.
type predicate func(b *Bundle) bool

var (
	celEnvOnce sync.Once
	celEnv     *constraints.CelEnvironment
	celRules   sync.Map // rule → constraints.CelProgram
)

func celProgram(rule string) (constraints.CelProgram, error) {
	if p, ok := celRules.Load(rule); ok {
		return p.(constraints.CelProgram), nil
	}
	celEnvOnce.Do(func() { celEnv = constraints.NewCelEnvironment() })
	p, err := celEnv.Validate(rule)
	if err != nil {
		return p, err
	}
	celRules.Store(rule, p)
	return p, nil
}

// compilePredicate turns an olm.constraint into a predicate over one bundle,
// following OLM's semantics: package and gvk match what a bundle provides,
// cel evaluates the rule over the bundle's properties, all/any/not combine.
func compilePredicate(c constraints.Constraint) (predicate, error) {
	var preds []predicate
	if c.Package != nil {
		pc := *c.Package
		rng := func(semver.Version) bool { return true }
		if pc.VersionRange != "" {
			r, err := semver.ParseRange(pc.VersionRange)
			if err != nil {
				return nil, fmt.Errorf("package %q: invalid versionRange %q: %w", pc.PackageName, pc.VersionRange, err)
			}
			rng = r
		}
		preds = append(preds, func(b *Bundle) bool { return b.Package == pc.PackageName && rng(b.Version) })
	}
	if c.GVK != nil {
		want := GVK{Group: c.GVK.Group, Version: c.GVK.Version, Kind: c.GVK.Kind}
		preds = append(preds, func(b *Bundle) bool {
			for _, g := range b.Provides {
				if g == want {
					return true
				}
			}
			return false
		})
	}
	if c.Cel != nil {
		prog, err := celProgram(c.Cel.Rule)
		if err != nil {
			return nil, fmt.Errorf("cel rule %q: %w", c.Cel.Rule, err)
		}
		preds = append(preds, func(b *Bundle) bool {
			data, err := b.celProperties()
			if err != nil {
				return false
			}
			ok, err := prog.Evaluate(data)
			return err == nil && ok
		})
	}
	for _, compound := range []struct {
		cc   *constraints.CompoundConstraint
		kind string
	}{{c.All, "all"}, {c.Any, "any"}, {c.Not, "not"}} {
		if compound.cc == nil {
			continue
		}
		subs := make([]predicate, 0, len(compound.cc.Constraints))
		for _, sc := range compound.cc.Constraints {
			p, err := compilePredicate(sc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", compound.kind, err)
			}
			subs = append(subs, p)
		}
		switch compound.kind {
		case "all":
			preds = append(preds, func(b *Bundle) bool {
				for _, p := range subs {
					if !p(b) {
						return false
					}
				}
				return true
			})
		case "any":
			preds = append(preds, func(b *Bundle) bool { return anyOf(subs, b) })
		case "not":
			preds = append(preds, func(b *Bundle) bool { return !anyOf(subs, b) })
		}
	}
	switch len(preds) {
	case 0:
		return nil, errors.New("olm.constraint names no constraint (want one of package, gvk, cel, all, any, not)")
	case 1:
		return preds[0], nil
	}
	return nil, errors.New("olm.constraint names more than one constraint (want exactly one of package, gvk, cel, all, any, not)")
}

func anyOf(preds []predicate, b *Bundle) bool {
	for _, p := range preds {
		if p(b) {
			return true
		}
	}
	return false
}

// renderConstraint writes an olm.constraint for people.
func renderConstraint(c constraints.Constraint) string {
	switch {
	case c.Package != nil:
		if c.Package.VersionRange == "" {
			return fmt.Sprintf("package %q", c.Package.PackageName)
		}
		return fmt.Sprintf("package %q in range %q", c.Package.PackageName, c.Package.VersionRange)
	case c.GVK != nil:
		return "the API " + GVK{Group: c.GVK.Group, Version: c.GVK.Version, Kind: c.GVK.Kind}.String()
	case c.Cel != nil:
		return fmt.Sprintf("a bundle matching cel rule %q", c.Cel.Rule)
	case c.All != nil:
		return "a bundle with all of [" + renderList(c.All.Constraints) + "]"
	case c.Any != nil:
		return "a bundle with any of [" + renderList(c.Any.Constraints) + "]"
	case c.Not != nil:
		return "a bundle with none of [" + renderList(c.Not.Constraints) + "]"
	}
	return "an empty olm.constraint"
}

func renderList(cs []constraints.Constraint) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = renderConstraint(c)
	}
	return strings.Join(parts, "; ")
}
