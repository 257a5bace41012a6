package apply

// The stored revisions of a release: reading them (history, History), repairing what a crash
// between two writes left (settle), and closing revisions a crash interrupted (closeInterrupted).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// revisions is the stored history of a release, sorted out.
type revisions struct {
	// deployed is the newest deployed revision, nil before the first install completed.
	deployed *release.Release
	// last is the newest revision of any status.
	last *release.Release
	// interrupted are revisions left pending by a controller that stopped while applying them.
	interrupted []*release.Release
	// all is every stored revision, oldest first: what settle read, kept up to date by the writes
	// of the Apply that read it (records written are these same values), for the history an Apply
	// returns (Result.History) and the pruning of old records (Engine.create).
	all []*release.Release
}

// with is the history after rel was recorded: all with rel in place of the revision of its number,
// or added.
func (revs *revisions) with(rel *release.Release) []*release.Release {
	out := make([]*release.Release, 0, len(revs.all)+1)
	for _, r := range revs.all {
		if r.Version != rel.Version {
			out = append(out, r)
		}
	}
	out = append(out, rel)
	sortByVersion(out)
	return out
}

// newestFirst is hist (oldest first) as History returns it.
func newestFirst(hist []*release.Release) []Revision {
	out := make([]Revision, 0, len(hist))
	for i := len(hist) - 1; i >= 0; i-- {
		out = append(out, revisionOf(hist[i]))
	}
	return out
}

// isPending reports whether revision r is pending (being installed, upgraded or rolled back).
func isPending(r *release.Release) bool {
	return r.Info != nil && r.Info.Status.IsPending()
}

// settle reads the history of release name and repairs what a crash between two writes can leave:
// an older revision still marked deployed next to a newer deployed one is marked superseded.
func (e *Engine) settle(name string) (*revisions, error) {
	hist, err := e.history(name)
	if err != nil {
		return nil, err
	}
	revs := &revisions{all: hist}
	for _, r := range hist {
		if r.Info != nil && r.Info.Status == release.StatusDeployed {
			if revs.deployed != nil {
				revs.deployed.SetStatus(release.StatusSuperseded, "Superseded by revision "+fmt.Sprint(r.Version))
				if err := e.Storage.Update(revs.deployed); err != nil {
					return nil, fmt.Errorf("marking revision %d superseded: %w", revs.deployed.Version, err)
				}
			}
			revs.deployed = r
		}
		if isPending(r) {
			revs.interrupted = append(revs.interrupted, r)
		}
		revs.last = r
	}
	return revs, nil
}

// history is every stored revision of name, oldest first. An unreadable record makes it fail
// with a *Error of reason ReleaseCorrupt.
func (e *Engine) history(name string) ([]*release.Release, error) {
	hist, err := e.Storage.History(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, corrupt(fmt.Errorf("reading the revisions of release %q: %w", name, err))
	}
	sortByVersion(hist)
	return hist, nil
}

// Revision is one stored revision of a release.
type Revision struct {
	Version  int
	Status   string
	Deployed time.Time
	Info     map[string]interface{}
	// HealthyAt is when the revision was first seen Healthy (MarkHealthy); zero while it never was.
	HealthyAt time.Time
	// RollbackFrom is the revision a rollback (Rollback) replaced by this one; 0 for others.
	RollbackFrom int
	// Description is the rollback's reason for a rollback revision, empty for others.
	Description string
}

// History lists the stored revisions of release name, newest first.
func (e *Engine) History(name string) ([]Revision, error) {
	hist, err := e.history(name)
	if err != nil {
		return nil, err
	}
	return newestFirst(hist), nil
}

// leftAloneKey records, in a revision's Helm config, the objects its prune left alone.
const leftAloneKey = "rukpakLeftAlone"

// recordedLeftAlone is what the prune of revision r left alone.
func recordedLeftAlone(r *release.Release) []string {
	var out []string
	switch v := r.Config[leftAloneKey].(type) {
	case []string:
		out = append(out, v...)
	case []interface{}:
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// closeInterrupted prunes what interrupted revisions applied (applied, decoded) beyond objs and
// marks them failed.
func (e *Engine) closeInterrupted(ctx context.Context, name string, interrupted []*release.Release, applied [][]*unstructured.Unstructured, objs []*unstructured.Unstructured, current int) ([]string, error) {
	if len(interrupted) == 0 {
		return nil, nil
	}
	leftAlone, err := e.prune(ctx, name, applied, objs)
	if err != nil {
		return nil, err
	}
	for _, r := range interrupted {
		if err := e.markInterrupted(r, current); err != nil {
			return nil, err
		}
	}
	return leftAlone, nil
}

// markInterrupted marks revision r, which a crash interrupted, failed; current is the installed one.
func (e *Engine) markInterrupted(r *release.Release, current int) error {
	r.SetStatus(release.StatusFailed, fmt.Sprintf("Interrupted: rukpak stopped while applying it; revision %d is installed", current))
	if err := e.Storage.Update(r); err != nil {
		return fmt.Errorf("closing interrupted revision %d: %w", r.Version, err)
	}
	return nil
}
