package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/olmv1/olmv1/deppy/pkg/problem"
	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

type solveOptions struct {
	file   string
	output outputFormat
}

func solveFlags(o *solveOptions) *flag.FlagSet {
	o.output = "text"
	fs := flag.NewFlagSet("solve", flag.ContinueOnError)
	fs.StringVar(&o.file, "f", "", "problem file (YAML or JSON); - reads standard input")
	fs.Var(&o.output, "o", "output `format`: text, yaml or json")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: deppy solve -f FILE [-o text|yaml|json]

Solves a generic problem: variables with constraints. Prints the selected
variables, or why no selection satisfies every constraint.

Problem file:
  variables:
    - id: app
      constraints:
        - mandatory: true
        - dependency: [db-v2, db-v1]      # at least one, prefer db-v2
    - id: db-v2
      constraints:
        - conflict: legacy                # not both
    - id: db-v1
    - id: legacy
      constraints:
        - mandatory: true
          message: legacy must stay       # used in explanations
    - id: one-db
      constraints:
        - atMost: {max: 1, ids: [db-v1, db-v2]}
  Other constraints: prohibited: true, not: true (same as prohibited),
  or: {id: x, negateSubject: true, negateOperand: false}.

Examples:
  deppy solve -f problem.yaml
  deppy solve -f problem.yaml -o json
  cat problem.yaml | deppy solve -f -

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// solveOutput is what `deppy solve -o yaml|json` prints.
type solveOutput struct {
	Satisfiable bool         `json:"satisfiable"`
	Selected    []string     `json:"selected,omitempty"`
	Explanation *explanation `json:"explanation,omitempty"`
}

func runSolve(args []string, stdin io.Reader, stdout io.Writer) error {
	var o solveOptions
	fs := solveFlags(&o)
	fs.SetOutput(io.Discard) // errors are returned, help goes to stdout
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil
		}
		return usageError{err.Error() + " (see deppy solve --help)"}
	}
	if o.file == "" || fs.NArg() > 0 {
		return usageError{"want -f FILE and no other arguments (see deppy solve --help)"}
	}
	in := stdin
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	vars, err := problem.Read(in)
	if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	sol, err := resolve.Solve(vars)
	out := solveOutput{}
	if err != nil {
		ns := asNotSatisfiable(err)
		if ns == nil {
			return err
		}
		out.Explanation = explain(ns)
	} else {
		out.Satisfiable = true
		for _, v := range sol.Selected() {
			out.Selected = append(out.Selected, string(v.ID))
		}
	}
	if o.output == "text" {
		if out.Satisfiable {
			fmt.Fprintln(stdout, "Selected:")
			for _, id := range out.Selected {
				fmt.Fprintln(stdout, "  "+id)
			}
		} else {
			printExplanationText(stdout, out.Explanation)
		}
	} else if err := printStructured(stdout, o.output, out); err != nil {
		return err
	}
	if !out.Satisfiable {
		return errNoSolution
	}
	return nil
}
