package bundletest

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	return &Report{Name: "bundle-test widget-operator 0.2.0", Steps: []Step{
		{Name: "read bundle x", Result: Passed, Duration: 1500 * time.Millisecond, Message: "package widget-operator"},
		{Name: "install AllNamespaces", Result: Failed, Duration: 3 * time.Second,
			Message: "Operator bundle-test-allnamespaces did not become Installed\nInstalled=False InstallationFailed: boom <&>"},
		{Name: "examples AllNamespaces", Result: Skipped, Message: "not installed"},
	}, Note: KwokNote}
}

func TestReportCounts(t *testing.T) {
	r := sampleReport()
	if !r.Failed() || r.Count(Passed) != 1 || r.Count(Failed) != 1 || r.Count(Skipped) != 1 {
		t.Fatalf("counts: failed=%v passed=%d failed=%d skipped=%d", r.Failed(), r.Count(Passed), r.Count(Failed), r.Count(Skipped))
	}
	if got := r.Duration(); got != 4500*time.Millisecond {
		t.Fatalf("Duration = %s, want 4.5s", got)
	}
	r.Steps = r.Steps[:1]
	if r.Failed() {
		t.Fatal("a report without failed steps must not be Failed")
	}
}

func TestWriteSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport().WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "STEP") || !strings.Contains(lines[0], "RESULT") || !strings.Contains(lines[0], "DURATION") || !strings.Contains(lines[0], "MESSAGE") {
		t.Fatalf("header: %q", lines[0])
	}
	// Columns line up: RESULT starts at the same offset on every row.
	col := strings.Index(lines[0], "RESULT")
	for i, want := range []string{"PASSED", "FAILED", "SKIPPED"} {
		if got := strings.Index(lines[i+1], want); got != col {
			t.Errorf("row %d: %s at column %d, want %d: %q", i+1, want, got, col, lines[i+1])
		}
	}
	for _, want := range []string{
		"1.5s", "did not become Installed …", // a multi-line message shows its first line in the table
		"bundle-test widget-operator 0.2.0: FAILED — 1 passed, 1 failed, 1 skipped in 4.5s",
		"pods were simulated by kwok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJUnit(t *testing.T) {
	var buf bytes.Buffer
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := sampleReport().WriteJUnit(&buf, started); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "<?xml") {
		t.Fatalf("no XML header:\n%s", buf.String())
	}
	var got struct {
		Suites []struct {
			Name      string `xml:"name,attr"`
			Tests     int    `xml:"tests,attr"`
			Failures  int    `xml:"failures,attr"`
			Skipped   int    `xml:"skipped,attr"`
			Time      string `xml:"time,attr"`
			Timestamp string `xml:"timestamp,attr"`
			SystemOut string `xml:"system-out"`
			Cases     []struct {
				Name    string `xml:"name,attr"`
				Time    string `xml:"time,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if len(got.Suites) != 1 {
		t.Fatalf("want one testsuite, got %d", len(got.Suites))
	}
	s := got.Suites[0]
	if s.Name != "bundle-test widget-operator 0.2.0" || s.Tests != 3 || s.Failures != 1 || s.Skipped != 1 || s.Time != "4.500" || s.Timestamp != "2026-01-02T03:04:05Z" {
		t.Errorf("testsuite attributes: %+v", s)
	}
	if !strings.Contains(s.SystemOut, "kwok") {
		t.Errorf("system-out should say pods were simulated by kwok: %q", s.SystemOut)
	}
	if len(s.Cases) != 3 {
		t.Fatalf("want one testcase per step, got %d", len(s.Cases))
	}
	c := s.Cases[1]
	if c.Name != "install AllNamespaces" || c.Time != "3.000" || c.Failure == nil {
		t.Fatalf("failed testcase: %+v", c)
	}
	if !strings.Contains(c.Failure.Text, "InstallationFailed: boom <&>") || strings.Contains(c.Failure.Message, "\n") {
		t.Errorf("failure: message %q (one line), text %q (whole, escaped and read back)", c.Failure.Message, c.Failure.Text)
	}
	if s.Cases[0].Failure != nil || s.Cases[2].Skipped == nil {
		t.Errorf("passed and skipped testcases: %+v %+v", s.Cases[0], s.Cases[2])
	}
}

func TestParseInstallModes(t *testing.T) {
	got, err := ParseInstallModes("allnamespaces, OwnNamespace,,SingleNamespace")
	if err != nil || strings.Join(got, ",") != "AllNamespaces,OwnNamespace,SingleNamespace" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseInstallModes("OwnNamespacejl"); err == nil || !strings.Contains(err.Error(), "MultiNamespace") {
		t.Fatalf("want an error listing the modes, got %v", err)
	}
}

func TestReadBundleFixture(t *testing.T) {
	b, err := ReadBundle("../testdata/author/0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if b.Package != "widget-operator" || b.Name != "widget-operator.v0.2.0" || b.Version != "0.2.0" || b.DefaultChannel != "stable" {
		t.Errorf("bundle: %+v", b)
	}
	if strings.Join(b.InstallModes, ",") != "AllNamespaces,OwnNamespace,SingleNamespace" {
		t.Errorf("install modes %v", b.InstallModes)
	}
	if len(b.Examples) != 2 || b.Examples[1].GetName() != "blue" || len(b.CRDs) != 1 || b.CRDs[0] != "widgets.author.olmv1.io" {
		t.Errorf("examples %d, CRDs %v", len(b.Examples), b.CRDs)
	}
}

func TestChannelHead(t *testing.T) {
	blobs := []map[string]any{{"schema": "olm.channel", "name": "stable", "entries": []any{
		map[string]any{"name": "a.v1"},
		map[string]any{"name": "a.v2", "replaces": "a.v1"},
		map[string]any{"name": "a.v3", "replaces": "a.v2", "skips": []any{"a.v1"}},
	}}}
	if h, err := channelHead(blobs, "stable"); err != nil || h != "a.v3" {
		t.Fatalf("head %q, %v", h, err)
	}
	if _, err := channelHead(blobs, "fast"); err == nil {
		t.Fatal("want an error for a missing channel")
	}
}
