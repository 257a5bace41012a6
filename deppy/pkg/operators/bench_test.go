package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// generatedFBC is a catalog of n packages, each with versions 1.0.0 → 1.1.0 → 1.2.0 (replaces chain)
// in channel stable, every package after the first requiring the API of the previous one.
func generatedFBC(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		pkg := fmt.Sprintf("pkg-%03d", i)
		fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
		fmt.Fprintf(&b, `{"schema":"olm.channel","package":%[1]q,"name":"stable","entries":[{"name":"%[1]s.v1.0.0"},{"name":"%[1]s.v1.1.0","replaces":"%[1]s.v1.0.0"},{"name":"%[1]s.v1.2.0","replaces":"%[1]s.v1.1.0"}]}`+"\n", pkg)
		for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
			props := fmt.Sprintf(`{"type":"olm.package","value":{"packageName":%q,"version":%q}},{"type":"olm.gvk","value":{"group":"%s.example.com","version":"v1","kind":"Thing"}}`, pkg, v, pkg)
			if i > 0 {
				props += fmt.Sprintf(`,{"type":"olm.gvk.required","value":{"group":"pkg-%03d.example.com","version":"v1","kind":"Thing"}}`, i-1)
			}
			fmt.Fprintf(&b, `{"schema":"olm.bundle","package":%[1]q,"name":"%[1]s.v%[2]s","image":"r/%[1]s:%[2]s","properties":[%[3]s]}`+"\n", pkg, v, props)
		}
	}
	return b.String()
}

func benchRequests(n int, installed bool) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		pkg := fmt.Sprintf("pkg-%03d", i)
		reqs[i] = Request{Name: "op-" + pkg, Package: pkg, Order: int64(i)}
		if installed {
			reqs[i].Installed = &Installed{BundleName: pkg + ".v1.0.0", Version: "1.0.0"}
		}
	}
	return reqs
}

func benchmarkResolve(b *testing.B, installed bool) {
	idx, err := olm.NewIndex(loadCatalog(b, "generated", 0, generatedFBC(100)))
	if err != nil {
		b.Fatal(err)
	}
	reqs := benchRequests(100, installed)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := Resolve(context.Background(), idx, reqs)
		if o := out["op-pkg-099"]; o.Bundle == nil {
			b.Fatal(o.Message)
		}
	}
}

// BenchmarkResolve100Operators resolves 100 Operators (a chain of 100 API dependencies) together.
func BenchmarkResolve100Operators(b *testing.B) { benchmarkResolve(b, false) }

// BenchmarkResolve100InstalledOperators does the same with every Operator installed at 1.0.0 (one
// upgrade edge each).
func BenchmarkResolve100InstalledOperators(b *testing.B) { benchmarkResolve(b, true) }

func TestGeneratedCatalogResolves(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "generated", 0, generatedFBC(100)))
	if err != nil {
		t.Fatal(err)
	}
	out := Resolve(context.Background(), idx, benchRequests(100, true))
	for name, o := range out {
		if o.Bundle == nil || o.Bundle.Version != "1.1.0" {
			t.Fatalf("%s: %+v %s", name, o.Bundle, o.Message)
		}
	}
	// Without an Operator for pkg-000, pkg-001 cannot resolve, and neither can pkg-002, which needs
	// pkg-001: an Operator that fails does not provide its package to others.
	out = Resolve(context.Background(), idx, benchRequests(100, false)[1:3])
	for _, name := range []string{"op-pkg-001", "op-pkg-002"} {
		if out[name].Bundle != nil || !strings.Contains(out[name].Message, `packageName "pkg-00`) {
			t.Fatalf("%s: %+v", name, out[name])
		}
	}
}
