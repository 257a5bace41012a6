package output

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrint(t *testing.T) {
	v := map[string]any{"name": "demo", "bundles": 2}
	tbl := func() *Table {
		t := NewTable("NAME", "BUNDLES")
		t.Add("demo", "2")
		t.Add("a-longer-name", "10")
		return t
	}
	for _, tc := range []struct{ format, want string }{
		{"table", "NAME            BUNDLES\ndemo            2\na-longer-name   10\n"},
		{"yaml", "bundles: 2\nname: demo\n"},
		{"json", "{\n  \"bundles\": 2,\n  \"name\": \"demo\"\n}\n"},
	} {
		var b bytes.Buffer
		if err := Print(&b, tc.format, v, tbl); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("-o %s:\n%q\nwant\n%q", tc.format, b.String(), tc.want)
		}
		if err := Check(tc.format); err != nil {
			t.Errorf("Check(%q): %v", tc.format, err)
		}
	}
	if err := Check("xml"); err == nil || err.Error() != `--output "xml": use table, yaml or json` {
		t.Errorf("Check(xml): %v", err)
	}
}

func TestCells(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{90 * time.Second: "90s", 5 * time.Minute: "5m", 3 * time.Hour: "3h", 72 * time.Hour: "3d"} {
		if got := Age(metav1.NewTime(now.Add(-d)), now); got != want {
			t.Errorf("Age(%s) = %s, want %s", d, got, want)
		}
	}
	if Age(metav1.Time{}, now) != "<unknown>" || OrNone("") != "<none>" || OrDash("") != "-" || OrNone("x") != "x" || OrDash("x") != "x" {
		t.Error("empty cells")
	}
}
