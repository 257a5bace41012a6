package source

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// DefaultMaxAdvertisedRefs bounds the reference advertisement of an http(s) git server (what git
// ls-remote lists: every branch, tag and other reference). go-git reads the whole advertisement into
// memory before anything else, so a hostile or broken server could make it read without end. 32 MiB
// is about 400 000 references, more than repositories with a hundred thousand pull requests
// advertise.
const DefaultMaxAdvertisedRefs = 32 << 20

// errRefsTooLarge ends the read of an advertisement past its limit.
var errRefsTooLarge = errors.New("the reference advertisement exceeds its limit")

// refsBudget is the limit of the advertisements read for one unpack, and whether one exceeded it.
// It travels in the context of go-git's requests: the transport is installed once for the process.
// It also carries the unpacker's transport (Config.Transport, with its TLS profile), which go-git's
// requests for that unpack use instead of http.DefaultTransport.
type refsBudget struct {
	max      int64
	exceeded atomic.Bool
	base     http.RoundTripper
}

type refsBudgetKey struct{}

func withRefsBudget(ctx context.Context, max int64, base http.RoundTripper) context.Context {
	return context.WithValue(ctx, refsBudgetKey{}, &refsBudget{max: max, base: base})
}

// refsExceeded says whether an advertisement read with ctx was stopped at its limit.
func refsExceeded(ctx context.Context) bool {
	b, _ := ctx.Value(refsBudgetKey{}).(*refsBudget)
	return b != nil && b.exceeded.Load()
}

// refsLimitTransport bounds the body of every GET …/info/refs (the advertisement of the smart HTTP
// protocol) by the budget of the request's context, or DefaultMaxAdvertisedRefs. Other requests
// pass unchanged; the packfile a fetch receives has its own limit (packlimit.go).
//
// go-git clones an *http.Transport for endpoints with TLS or proxy options; rukpak sets none on its
// endpoints, so this wrapper is the transport of every http(s) fetch.
type refsLimitTransport struct{ base http.RoundTripper }

func (t refsLimitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := req.Context().Value(refsBudgetKey{}).(*refsBudget)
	base := t.base
	if b != nil && b.base != nil {
		base = b.base
	}
	resp, err := base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/info/refs") {
		return resp, err
	}
	if b == nil {
		b = &refsBudget{max: DefaultMaxAdvertisedRefs}
	}
	resp.Body = &refsBody{ReadCloser: resp.Body, left: b.max, budget: b}
	return resp, nil
}

// refsBody reads an advertisement up to its budget; past it, it fails and marks the budget.
type refsBody struct {
	io.ReadCloser
	left   int64
	budget *refsBudget
}

func (r *refsBody) Read(p []byte) (int, error) {
	if r.left <= 0 {
		// The budget is spent: one byte more means the advertisement is too large.
		var one [1]byte
		if n, err := r.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		r.budget.exceeded.Store(true)
		return 0, errRefsTooLarge
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.ReadCloser.Read(p)
	r.left -= int64(n)
	return n, err
}
