package apply

// Progress deadlines and rollbacks. The controller decides when an installed revision failed (it
// was never Healthy within the BundleDeployment's progress deadline); the engine records when a
// revision became Healthy (MarkHealthy) and re-applies an earlier revision as a new one (Rollback).
//
// A rollback revision remembers the content it abandoned (its manifest digest) and the Attempt
// that asked for it: Apply does not apply that content again while the request carries the same
// Attempt (the controller's hash of the spec), and re-applies the rollback revision instead, so
// a failed upgrade is not retried in a loop. A new Attempt (the spec changed) tries it again.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Keys of a revision's Helm config, besides digestKey and leftAloneKey.
const (
	// attemptKey is the Request.Attempt that asked for the revision.
	attemptKey = "rukpakAttempt"
	// healthyAtKey is when the revision was first seen Healthy (RFC 3339).
	healthyAtKey = "rukpakHealthyAt"
	// rollbackFromKey is the revision a rollback replaced.
	rollbackFromKey = "rukpakRollbackFrom"
	// descriptionKey is why a rollback revision was made.
	descriptionKey = "rukpakDescription"
	// abandonedDigestKey and abandonedAttemptKey are the content a rollback abandoned and the
	// Attempt that had asked for it.
	abandonedDigestKey   = "rukpakAbandonedDigest"
	abandonedIdentityKey = "rukpakAbandonedIdentity"
	abandonedAttemptKey  = "rukpakAbandonedAttempt"
)

// configString is the string value of key in r's Helm config ("" when absent).
func configString(r *release.Release, key string) string {
	s, _ := r.Config[key].(string)
	return s
}

// configInt is the integer value of key in r's Helm config (0 when absent); JSON decodes numbers
// as float64.
func configInt(r *release.Release, key string) int {
	switch v := r.Config[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// abandons reports whether deployed is a rollback that abandoned content digest (with identity
// identity) for attempt.
func abandons(deployed *release.Release, digest, identity, attempt string) bool {
	if attempt == "" || configString(deployed, abandonedDigestKey) != digest || configString(deployed, abandonedAttemptKey) != attempt {
		return false
	}
	abandoned := configString(deployed, abandonedIdentityKey)
	return identity == "" || abandoned == "" || abandoned == identity
}

func revisionOf(r *release.Release) Revision {
	rev := Revision{Version: r.Version, Status: string(r.Info.Status), Deployed: r.Info.LastDeployed.Time, Info: r.Config,
		RollbackFrom: configInt(r, rollbackFromKey), Description: configString(r, descriptionKey)}
	if t, err := time.Parse(time.RFC3339, configString(r, healthyAtKey)); err == nil {
		rev.HealthyAt = t
	}
	return rev
}

// MarkHealthy records that revision version of release name was seen Healthy at at, unless it
// already carries a time. It returns the time it wrote, as Revision.HealthyAt reads it back (whole
// seconds, UTC), or the zero time when it wrote nothing.
// It reads that one record (not the release's whole history).
func (e *Engine) MarkHealthy(name string, version int, at time.Time) (time.Time, error) {
	r, err := e.Storage.Get(name, version)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, corrupt(fmt.Errorf("reading revision %d of release %q: %w", version, name, err))
	}
	if configString(r, healthyAtKey) != "" || r.Info == nil || r.Info.Status != release.StatusDeployed {
		return time.Time{}, nil
	}
	if r.Config == nil {
		r.Config = map[string]interface{}{}
	}
	recorded := at.UTC().Truncate(time.Second)
	r.Config[healthyAtKey] = recorded.Format(time.RFC3339)
	if err := e.Storage.Update(r); err != nil {
		return time.Time{}, corrupt(fmt.Errorf("recording that revision %d of release %q is healthy: %w", version, name, err))
	}
	return recorded, nil
}

// RollbackRequest asks to replace the deployed revision From with the content of the earlier
// revision To, recorded as a new revision.
type RollbackRequest struct {
	// Request carries the release name, namespace, collision policy and preflight; its Objects and
	// Info are not used (the objects are To's).
	Request
	// From is the deployed revision being replaced, To the revision whose content is re-applied.
	From, To int
	// Why is recorded as the new revision's description.
	Why string
}

// Rollback re-applies the content of revision To as a new revision while From is deployed. The
// preflight runs on To's objects first (rolling back CRDs is an upgrade of CRDs like any other),
// and a refusal is a *Error with ReasonPreflightFailed. The new revision remembers the content it
// abandoned, so that Apply does not try it again for the same Attempt.
func (e *Engine) Rollback(ctx context.Context, req RollbackRequest) (*Result, error) {
	revs, err := e.settle(req.Name)
	if err != nil {
		return nil, err
	}
	deployed := revs.deployed
	if deployed == nil || deployed.Version != req.From {
		return nil, fmt.Errorf("revision %d of release %q is no longer the deployed one: not rolling it back", req.From, req.Name)
	}
	var target *release.Release
	for _, r := range revs.all {
		if r.Version == req.To {
			target = r
		}
	}
	if target == nil {
		return nil, fmt.Errorf("revision %d of release %q is no longer stored (--max-history): cannot roll back to it", req.To, req.Name)
	}
	recorded, err := e.recordedObjects(deployed, target)
	if err != nil {
		return nil, err
	}
	interrupted, err := e.recordedObjects(revs.interrupted...)
	if err != nil {
		return nil, err
	}
	objs := recorded[1]
	if req.Preflight != nil {
		if err := req.Preflight(ctx, objs); err != nil {
			return nil, &Error{Reason: ReasonPreflightFailed, Err: err}
		}
	}
	info := map[string]interface{}{}
	for k, v := range target.Config {
		switch k {
		case healthyAtKey, leftAloneKey, rollbackFromKey, descriptionKey, abandonedDigestKey, abandonedIdentityKey, abandonedAttemptKey:
		default:
			info[k] = v // the digest, identity, content hash, resolved source, chart version, values hash
		}
	}
	info[rollbackFromKey] = req.From
	info[descriptionKey] = req.Why
	info[abandonedDigestKey] = configString(deployed, digestKey)
	info[abandonedIdentityKey] = configString(deployed, identityKey)
	info[abandonedAttemptKey] = configString(deployed, attemptKey)
	return e.install(ctx, req.Request, revs, recorded[:1], interrupted, objs, configString(target, digestKey), info, "Rollback: "+req.Why)
}
