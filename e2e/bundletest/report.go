package bundletest

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Results of a step.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
)

// KwokNote is said in a report whose pods were simulated: the local control plane's nodes were
// kwok's, so the operator's pods never ran; kwok marked them Running and Ready.
const KwokNote = "pods were simulated by kwok: the local control plane has no real kubelet, so the operator's containers never ran (kwok marked its pods Running and Ready)"

// RealPodsNote is said in a report whose pods ran on a real kubelet (Options.Pods "real").
const RealPodsNote = "pods ran on a real kubelet (containerd and runc in the test's own network namespace), with OLM v1 installed by its Helm chart as pods: the operator's containers really ran"

// Step is one step of a bundle test and how it ended.
type Step struct {
	Name     string
	Result   string
	Duration time.Duration
	// Message says what was checked (passed) or why it failed, with the Operator's own condition
	// messages; several lines are possible.
	Message string
}

// Report is the outcome of a bundle test: its steps in the order they ran.
type Report struct {
	// Name names the test, e.g. "bundle-test widget-operator 0.2.0".
	Name  string
	Steps []Step
	// Note says how the pods ran: KwokNote or RealPodsNote.
	Note string
}

// Failed reports whether any step failed.
func (r *Report) Failed() bool { return r.Count(Failed) > 0 }

// Count returns the number of steps with the result.
func (r *Report) Count(result string) int {
	n := 0
	for _, s := range r.Steps {
		if s.Result == result {
			n++
		}
	}
	return n
}

// Duration is the sum of the steps' durations.
func (r *Report) Duration() time.Duration {
	var d time.Duration
	for _, s := range r.Steps {
		d += s.Duration
	}
	return d
}

// WriteSummary writes the summary table (step, result, duration, message; a message's first line),
// the totals and the note on how the pods ran to w.
func (r *Report) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tRESULT\tDURATION\tMESSAGE")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, strings.ToUpper(s.Result), formatDuration(s.Duration), firstLine(s.Message, 120))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "PASSED"
	if r.Failed() {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintf(w, "%s: %s — %d passed, %d failed, %d skipped in %s\nnote: %s\n",
		r.Name, verdict, r.Count(Passed), r.Count(Failed), r.Count(Skipped), formatDuration(r.Duration()), r.Note)
	return err
}

func formatDuration(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// firstLine returns the first line of s, cut to max runes, with "…" when anything was left out.
func firstLine(s string, max int) string {
	line, rest, more := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	if more && strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}

// JUnit XML, as Jenkins, GitLab and GitHub test reporters read it.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
	SystemOut string      `xml:"system-out,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: one testsuite, one testcase per step. started is the
// time the test started (zero: no timestamp).
func (r *Report) WriteJUnit(w io.Writer, started time.Time) error {
	s := junitSuite{
		Name: r.Name, Tests: len(r.Steps), Failures: r.Count(Failed), Skipped: r.Count(Skipped),
		Time: seconds(r.Duration()), SystemOut: r.Note,
	}
	if !started.IsZero() {
		s.Timestamp = started.UTC().Format(time.RFC3339)
	}
	for _, st := range r.Steps {
		c := junitCase{Name: st.Name, Classname: "bundle-test", Time: seconds(st.Duration)}
		switch st.Result {
		case Failed:
			c.Failure = &junitMessage{Message: firstLine(st.Message, 200), Text: st.Message}
		case Skipped:
			c.Skipped = &junitMessage{Message: firstLine(st.Message, 200)}
		default:
			c.SystemOut = st.Message
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJUnitFile writes the JUnit XML to path.
func (r *Report) WriteJUnitFile(path string, started time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the JUnit report: %w", err)
	}
	if err := r.WriteJUnit(f, started); err != nil {
		f.Close()
		return fmt.Errorf("writing the JUnit report %s: %w", path, err)
	}
	return f.Close()
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
