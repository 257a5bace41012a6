// Package command is what every command of kubectl olmv1 runs with: its streams, the flags all of
// them share (-o, --kubeconfig, --context), the client of the cluster, and the error of a command
// that has already explained itself. Every command takes the one *Options of the tree package cli
// builds.
package command

import (
	"context"
	"errors"
	"io"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// Streams are where a command reads and writes.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Options are the flags every command shares.
type Options struct {
	Streams
	Output     string
	Kubeconfig string
	Context    string
	// PollInterval is how often --wait reads the object again.
	PollInterval time.Duration
	// NewClient, when set, replaces the client of the kubeconfig (tests).
	NewClient func() (client.Client, error)
	// NewClusterVersion, when set, replaces reading the cluster's version from the kubeconfig's
	// discovery (tests); with NewClient set and this unset, the version is unknown.
	NewClusterVersion func(context.Context) (*olm.Cluster, error)
	// Pull, when set, replaces pulling a bundle image into a directory (tests).
	Pull func(ctx context.Context, image string, insecure bool) (dir string, remove func(), err error)
}

// Print writes v as YAML or JSON (o.Output yaml|json), or the table tbl returns.
func (o *Options) Print(v any, tbl func() *output.Table) error {
	return output.Print(o.Out, o.Output, v, tbl)
}

// SilentError is returned by a command that has already printed why it failed (e.g. the problems
// of `bundle validate`): main exits non-zero without printing it again.
type SilentError struct{ Err error }

func (e *SilentError) Error() string { return e.Err.Error() }
func (e *SilentError) Unwrap() error { return e.Err }

// IsSilent reports whether err was already explained to the user.
func IsSilent(err error) bool {
	var s *SilentError
	return errors.As(err, &s)
}
