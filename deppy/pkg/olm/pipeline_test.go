package olm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

func TestDefaultPipelineStages(t *testing.T) {
	idx := index(t, catalog("main", 0).bundle("a", "1.0.0"))
	got := strings.Join(Pipeline(idx, Problem{}).Names(), " ")
	if got != "required-packages installed-bundles bundle-dependencies uniqueness" {
		t.Fatalf("stages: %s", got)
	}
}

func TestCustomizedPipeline(t *testing.T) {
	idx := index(t,
		catalog("main", 0).bundle("a", "1.0.0").bundle("a", "2.0.0", deprecated("2.x is broken")),
		catalog("mirror", 5).bundle("a", "1.0.0"))

	// A stage refining variables: deprecated bundles are not allowed at all.
	noDeprecated := resolve.NewSource("no-deprecated", func(_ context.Context, vars *resolve.Variables) error {
		for _, v := range vars.All() {
			if b, ok := v.Entity.(*Bundle); ok && b.Deprecated() {
				v.Add(resolve.Prohibited().WithMessage(b.Name + " is deprecated: " + b.Deprecation))
			}
		}
		return nil
	})
	// A stage dropping variables: nothing from the mirror.
	noMirror := resolve.NewSource("no-mirror", func(_ context.Context, vars *resolve.Variables) error {
		var drop []resolve.Identifier
		for _, v := range vars.All() {
			if b, ok := v.Entity.(*Bundle); ok && b.Catalog == "mirror" {
				drop = append(drop, v.ID)
			}
		}
		vars.Remove(drop...)
		return nil
	})

	tests := []struct {
		name      string
		req       Requirement
		stages    []resolve.VariableSource
		want      string
		wantCat   string
		wantError string
	}{
		{name: "default prefers the mirror's priority", req: require("a"), want: "a=1.0.0", wantCat: "mirror"},
		{name: "dropping the mirror's bundles", req: require("a"), stages: []resolve.VariableSource{noMirror}, want: "a=1.0.0", wantCat: "main"},
		{name: "pinned deprecated bundle is allowed by default", req: requireRange("a", "2.0.0"), want: "a=2.0.0"},
		{name: "pinned deprecated bundle is refused by a custom stage", req: requireRange("a", "2.0.0"), stages: []resolve.VariableSource{noDeprecated},
			wantError: "a.v2.0.0 is deprecated: 2.x is broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{Index: idx, Customize: func(p resolve.Pipeline) (resolve.Pipeline, error) {
				var err error
				for _, s := range tt.stages {
					if p, err = p.Insert(StageBundleDependencies, s); err != nil {
						return nil, err
					}
				}
				return p, nil
			}}
			res, err := r.Resolve(t.Context(), Problem{Requirements: []Requirement{tt.req}})
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := chosen(res); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if tt.wantCat != "" && res.Selections[0].Catalog != tt.wantCat {
				t.Fatalf("catalog %q, want %q", res.Selections[0].Catalog, tt.wantCat)
			}
		})
	}
}

func TestResolutionIsDeterministic(t *testing.T) {
	idx := index(t, catalog("main", 0).
		bundle("app", "1.0.0", needsGVK("example.com", "v1", "Db"), needsGVK("example.com", "v1", "Cache")).
		bundle("db-a", "1.0.0", provides("example.com", "v1", "Db")).
		bundle("db-b", "1.0.0", provides("example.com", "v1", "Db")).
		bundle("cache", "1.0.0", provides("example.com", "v1", "Cache"), provides("example.com", "v1", "Db")))
	first := ""
	for i := 0; i < 20; i++ {
		got, ns := outcome(t, idx, Problem{Requirements: []Requirement{require("app")}})
		if ns != nil {
			t.Fatal(ns.Details())
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("run %d chose %q, first run chose %q", i, got, first)
		}
	}
	// cache provides Db as well, so a second Db provider would break GVK uniqueness.
	if first != "app=1.0.0 cache=1.0.0" {
		t.Fatalf("got %q, want app=1.0.0 cache=1.0.0", first)
	}
}

func TestIndexIsSafeForConcurrentResolutions(t *testing.T) {
	idx := index(t, catalog("main", 0).
		bundle("a", "1.0.0", olmConstraint(`{"cel":{"rule":"properties.exists(p, p.type == \"certified\")"}}`)).
		bundle("good", "1.0.0", withProperty("certified", `true`)).
		bundle("b", "1.0.0", needsPackage("good", ">=1.0.0")))
	errs := make(chan error, 8)
	for i := 0; i < cap(errs); i++ {
		go func() {
			res, err := Resolve(context.Background(), idx, Problem{Requirements: []Requirement{require("a"), require("b")}})
			if err == nil && chosen(res) != "a=1.0.0 b=1.0.0 good=1.0.0" {
				err = fmt.Errorf("got %s", chosen(res))
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
