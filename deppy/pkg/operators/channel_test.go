package operators

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// channelFBC is the shape on which `deppy resolve` and operator-controller used to disagree (see the
// file's header), shared with deppy's CLI test.
var channelFBC = func() string {
	data, err := os.ReadFile("../../../deppy/pkg/olm/testdata/channel-rule/catalog.yaml")
	if err != nil {
		panic(err)
	}
	return string(data)
}()

// TestDefaultChannelFirst: with no channel both operator-controller's resolver and the deppy CLI
// (the real binary, built from deppy/cmd/deppy) choose the default channel's head, not a higher
// version (or pre-release) of another channel; an explicit channel is used as given.
func TestDefaultChannelFirst(t *testing.T) {
	const catalogName = "channels"
	dir := filepath.Join(t.TempDir(), catalogName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(channelFBC), 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := olm.NewIndex(loadCatalog(t, catalogName, 0, channelFBC))
	if err != nil {
		t.Fatal(err)
	}
	deppy := deppyBinary(t)

	tests := []struct {
		name string
		reqs []Request
		want map[string]string // Operator (= package) name → bundle
	}{
		{name: "no channel: the default channel's head",
			reqs: []Request{{Name: "op", Package: "op"}}, want: map[string]string{"op": "op.v1.4.0"}},
		{name: "an explicit channel",
			reqs: []Request{{Name: "op", Package: "op", Channel: "candidate"}}, want: map[string]string{"op": "op.v2.0.0"}},
		{name: "an explicit pre-release channel",
			reqs: []Request{{Name: "op", Package: "op", Channel: "nightly"}}, want: map[string]string{"op": "op.v2.1.0-nightly.20260101"}},
		{name: "several channels: the highest version among them",
			reqs: []Request{{Name: "op", Package: "op", Channels: []string{"stable", "candidate"}}}, want: map[string]string{"op": "op.v2.0.0"}},
		{name: "several channels with a pre-release channel",
			reqs: []Request{{Name: "op", Package: "op", Channels: []string{"stable", "nightly"}}}, want: map[string]string{"op": "op.v2.1.0-nightly.20260101"}},
		{name: "no channel and a range only another channel satisfies",
			reqs: []Request{{Name: "op", Package: "op", VersionRange: ">=2.0.0"}}, want: map[string]string{"op": "op.v2.0.0"}},
		{name: "a dependency, the dependent Operator first",
			reqs: []Request{{Name: "app", Package: "app", Order: 1}, {Name: "op", Package: "op", Order: 2}},
			want: map[string]string{"app": "app.v1.0.0", "op": "op.v1.4.0"}},
		{name: "a dependency, the depended-on Operator first",
			reqs: []Request{{Name: "op", Package: "op", Order: 1}, {Name: "app", Package: "app", Order: 2}},
			want: map[string]string{"app": "app.v1.0.0", "op": "op.v1.4.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(context.Background(), idx, tt.reqs)
			cli := runDeppyResolve(t, deppy, []string{dir}, tt.reqs)
			for name, want := range tt.want {
				o := got[name]
				if o.Bundle == nil {
					t.Errorf("operator-controller: %s: no bundle: %s", name, o.Message)
				} else if o.Bundle.Name != want {
					t.Errorf("operator-controller: %s: got %s, want %s", name, o.Bundle.Name, want)
				}
				if s := cli[name]; s.Bundle != want {
					t.Errorf("deppy resolve: %s: got %q, want %s", name, s.Bundle, want)
				}
			}
		})
	}
}

// The deppy CLI, built once per test binary from this workspace (or taken from $OLMV1_DEPPY).
var deppyCLI struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// deppyBinary returns the path of a deppy binary built from deppy/cmd/deppy, so that tests compare
// operator-controller with the real command line. $OLMV1_DEPPY names a prebuilt binary instead.
func deppyBinary(t testing.TB) string {
	t.Helper()
	path, err := buildDeppy()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// buildDeppy builds deppy once per test binary (concurrent callers wait for the one build).
func buildDeppy() (string, error) {
	if p := os.Getenv("OLMV1_DEPPY"); p != "" {
		return p, nil
	}
	deppyCLI.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			deppyCLI.err = fmt.Errorf("the go tool is not on PATH (needed to build deppy; or set OLMV1_DEPPY to a deppy binary): %w", err)
			return
		}
		if deppyCLI.dir, err = os.MkdirTemp("", "deppy-cli-"); err != nil {
			deppyCLI.err = err
			return
		}
		deppyCLI.path = filepath.Join(deppyCLI.dir, "deppy")
		// The test's own environment: the packages are those this test binary was built from, so
		// the build cache has them (a different CGO_ENABLED would rebuild everything).
		cmd := exec.Command(goTool, "build", "-o", deppyCLI.path, "github.com/olmv1/olmv1/deppy/cmd/deppy")
		if out, err := cmd.CombinedOutput(); err != nil {
			deppyCLI.err = fmt.Errorf("go build deppy: %v\n%s", err, out)
		}
	})
	return deppyCLI.path, deppyCLI.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if deppyCLI.dir != "" {
		os.RemoveAll(deppyCLI.dir)
	}
	os.Exit(code)
}

// runDeppyResolve runs `deppy resolve` with the catalogs and, for each request (in resolution order:
// by Order, then name), --require PKG[@RANGE][#CHANNEL]. It returns the selections by the name of
// the request that asked for the package (nil when there is no solution).
func runDeppyResolve(t testing.TB, deppy string, catalogs []string, reqs []Request) map[string]olm.Selection {
	t.Helper()
	args := []string{"resolve", "-o", "json"}
	for _, c := range catalogs {
		args = append(args, "--catalog", c)
	}
	sorted := append([]Request(nil), reqs...)
	sortRequests(sorted)
	byPackage := map[string]string{}
	for _, r := range sorted {
		s := r.Package
		if r.VersionRange != "" {
			s += "@" + r.VersionRange
		}
		if chs := (olm.Requirement{Channel: r.Channel, Channels: r.Channels}).ChannelList(); len(chs) > 0 {
			s += "#" + strings.Join(chs, ",")
		}
		args = append(args, "--require", s)
		byPackage[r.Package] = r.Name
	}
	var stdout, stderr strings.Builder
	cmd := exec.Command(deppy, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return nil // no solution; the explanation is on stdout
	} else if err != nil {
		t.Fatalf("deppy %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var out struct {
		Resolved   bool            `json:"resolved"`
		Selections []olm.Selection `json:"selections"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("deppy %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
	got := map[string]olm.Selection{}
	for _, s := range out.Selections {
		name, ok := byPackage[s.Package]
		if !ok {
			name = s.Package
		}
		got[name] = s
	}
	return got
}

// TestChannelsFollowEdgesWithinThem: an installed bundle moves only along the upgrade edges of the
// channels the Operator names: 1.4.0 stays on stable alone (its head), and moves to 2.0.0 when
// candidate (where 2.0.0 replaces 1.4.0) is named too. AnyVersion: 1.4.0 → 2.0.0 crosses a major,
// which the semver guard rails hold back (semver_test.go).
func TestChannelsFollowEdgesWithinThem(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "channels", 0, channelFBC))
	if err != nil {
		t.Fatal(err)
	}
	installed := &Installed{BundleName: "op.v1.4.0", Version: "1.4.0"}
	for _, tt := range []struct {
		name     string
		channels []string
		want     string
	}{
		{"stable only", []string{"stable"}, "op.v1.4.0"},
		{"stable and candidate", []string{"stable", "candidate"}, "op.v2.0.0"},
		{"nightly: no edge from 1.4.0", []string{"stable", "nightly"}, "op.v1.4.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Resolve(context.Background(), idx, []Request{{Name: "op", Package: "op", Channels: tt.channels, AnyVersion: true, Installed: installed}})["op"]
			if o.Bundle == nil || o.Bundle.Name != tt.want {
				t.Errorf("got %+v (%s), want %s", o.Bundle, o.Message, tt.want)
			}
		})
	}
}
