package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// table is rows of cells under upper-case headers.
type table struct {
	headers []string
	rows    [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.headers, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// print writes v as YAML or JSON (o.output yaml|json), or calls tbl for the table form.
func (o *options) print(v any, tbl func() *table) error {
	switch o.output {
	case "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(data))
		return err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	}
	return tbl().write(o.Out)
}

// conditionStatus returns the status of a condition ("" when absent), or "Unknown" when it does not
// describe generation (0: any generation).
func conditionStatus(conds []metav1.Condition, typ string, generation int64) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	if generation != 0 && c.ObservedGeneration != generation {
		return "Unknown"
	}
	return string(c.Status)
}

func age(t metav1.Time, now time.Time) string {
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

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
