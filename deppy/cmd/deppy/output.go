package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// outputFormat is the value of -o.
type outputFormat string

func (f *outputFormat) String() string { return string(*f) }

func (f *outputFormat) Set(s string) error {
	switch s {
	case "text", "yaml", "json":
		*f = outputFormat(s)
		return nil
	}
	return fmt.Errorf("want text, yaml or json")
}

// explanation is how an unsolvable problem is printed.
type explanation struct {
	Summary []string `json:"summary,omitempty"`
	Reasons []string `json:"reasons"`
}

func explain(err *resolve.NotSatisfiableError) *explanation {
	return &explanation{Summary: err.Summary, Reasons: err.Reasons()}
}

// printStructured writes v as YAML or JSON.
func printStructured(w io.Writer, format outputFormat, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // ranges such as ">=1.0.0" stay readable
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("unknown output format %q", format)
}

func printExplanationText(w io.Writer, e *explanation) {
	fmt.Fprintln(w, "No solution.")
	for _, s := range e.Summary {
		fmt.Fprintln(w, "  "+s)
	}
	fmt.Fprintln(w, "Conflicting constraints:")
	for _, r := range e.Reasons {
		fmt.Fprintln(w, "  - "+r)
	}
}

// asNotSatisfiable returns the explanation of an unsolvable problem, or nil.
func asNotSatisfiable(err error) *resolve.NotSatisfiableError {
	var ns *resolve.NotSatisfiableError
	if errors.As(err, &ns) {
		return ns
	}
	return nil
}

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// printSelections prints the selections as a table, then their deprecations.
func printSelections(w io.Writer, sels []olm.Selection) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PACKAGE\tBUNDLE\tVERSION\tCATALOG\tREASON\tREQUIRED BY\tINSTALLED")
	for _, s := range sels {
		catalog := s.Catalog
		if catalog == "" {
			catalog = "(not in a catalog)"
		}
		installed := s.InstalledVersion
		if installed == "" {
			installed = "-"
		}
		by := strings.Join(s.RequiredBy, ",")
		if by == "" {
			by = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Package, s.Bundle, s.Version, catalog, s.Reason, by, installed)
	}
	tw.Flush()
	for _, s := range sels {
		if s.Deprecation != "" {
			fmt.Fprintf(w, "warning: %s %s is deprecated: %s\n", s.Package, s.Version, s.Deprecation)
		}
	}
}
