// Command kubectl-olmv1 is the OLM v1 kubectl plugin: put it on PATH and run `kubectl olmv1 --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/olmv1/olmv1/operator-controller/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := cli.Execute(ctx, cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	if err != nil {
		if !cli.IsSilent(err) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
}
