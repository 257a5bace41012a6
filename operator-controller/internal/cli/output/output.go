// Package output prints what the commands of kubectl olmv1 return: a table for people, or the
// value itself as YAML or JSON (the shared flag -o table|yaml|json).
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Check returns an error unless format is one that Print knows: table, yaml or json.
func Check(format string) error {
	switch format {
	case "table", "yaml", "json":
		return nil
	}
	return fmt.Errorf("--output %q: use table, yaml or json", format)
}

// Table is rows of cells under upper-case headers.
type Table struct {
	headers []string
	rows    [][]string
}

// NewTable returns an empty table with these headers.
func NewTable(headers ...string) *Table { return &Table{headers: headers} }

// Add appends a row.
func (t *Table) Add(cells ...string) { t.rows = append(t.rows, cells) }

// Write writes the headers and rows to w, the columns aligned.
func (t *Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.headers, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// Print writes v to w as YAML or JSON (format yaml|json), or else the table tbl returns.
func Print(w io.Writer, format string, v any, tbl func() *Table) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(data))
		return err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return tbl().Write(w)
}

// Age is how long ago t was, as kubectl prints it: 90s, 5m, 3h, 2d; "<unknown>" for no time.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(t.Time)
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// OrNone is s, or "<none>" when it is empty.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
