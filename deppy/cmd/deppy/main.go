// Command deppy solves dependency problems: generic ones written as YAML
// (deppy solve) and OLM ones over file-based catalogs or a cluster's Operators
// and Catalogs (deppy resolve).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit codes.
const (
	exitOK       = 0
	exitNoSolve  = 1 // the problem has no solution; the explanation was printed
	exitBadInput = 2 // usage or input error
)

const usage = `deppy: dependency resolution on the gini SAT solver (via operator-framework/deppy)

Usage:
  deppy solve   -f FILE [-o text|yaml|json]
  deppy resolve --catalog DIR --require PKG[@RANGE][#CHANNEL] [flags]
  deppy resolve --kubeconfig FILE [--context NAME] [--catalog-selector SELECTOR]
  deppy help [solve|resolve]

Commands:
  solve     solve a generic problem: variables with constraints, read from YAML or JSON
  resolve   choose OLM bundles from file-based catalogs for the required packages,
            or, with --kubeconfig, for every Operator of a cluster as operator-controller does

Exit status: 0 solved, 1 no solution (the explanation is printed), 2 usage or input error.

Examples:
  deppy solve -f problem.yaml
  deppy resolve --catalog ./catalogs/community --require cert-manager@">=1.12" --installed cert-manager@1.12.2
  deppy resolve --kubeconfig ~/.kube/config
  deppy resolve --help
`

// errNoSolution marks an unsolvable problem whose explanation was already printed.
var errNoSolution = errors.New("no solution")

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	var err error
	switch args[0] {
	case "solve":
		err = runSolve(args[1:], stdin, stdout)
	case "resolve":
		err = runResolve(ctx, args[1:], stdout)
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "deppy: unknown command %q\n\n%s", args[0], usage)
		return exitBadInput
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errNoSolution):
		return exitNoSolve
	}
	fmt.Fprintf(stderr, "deppy %s: %v\n", args[0], err)
	return exitBadInput
}

func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	switch args[0] {
	case "solve":
		fs := solveFlags(new(solveOptions))
		fs.SetOutput(stdout)
		fs.Usage()
	case "resolve":
		fs := resolveFlags(new(resolveOptions))
		fs.SetOutput(stdout)
		fs.Usage()
	default:
		fmt.Fprintf(stderr, "deppy help: unknown command %q\n", args[0])
		return exitBadInput
	}
	return exitOK
}
