package delegatedauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Attributes describe a request to authorize: a resource request (Group … Name) or a non-resource
// one (Path), by User with Verb (get, list, create, …).
type Attributes struct {
	User            *User
	Verb            string
	ResourceRequest bool
	Path            string
	Group           string
	Version         string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
}

// AuthorizerOptions configure an Authorizer.
type AuthorizerOptions struct {
	// SubjectAccessReviews asks the API server; required unless everything is always allowed.
	SubjectAccessReviews authorizationv1client.SubjectAccessReviewInterface
	// AllowTTL and DenyTTL are how long an allowed or denied answer is reused; 0 means 10 seconds.
	AllowTTL, DenyTTL time.Duration
	// AlwaysAllowPaths are non-resource paths anyone may request, matched exactly (e.g. /healthz).
	AlwaysAllowPaths []string
	// AlwaysAllowGroups are groups whose members may do anything (e.g. system:masters).
	AlwaysAllowGroups []string
}

// Authorizer authorizes requests with SubjectAccessReviews, caching the answers.
type Authorizer struct {
	reviews      authorizationv1client.SubjectAccessReviewInterface
	allowTTL     time.Duration
	denyTTL      time.Duration
	alwaysPaths  []string
	alwaysGroups []string
	answers      *cache.LRUExpireCache
	backoff      wait.Backoff
}

// NewAuthorizer returns an Authorizer for o.
func NewAuthorizer(o AuthorizerOptions) *Authorizer {
	z := &Authorizer{
		reviews:      o.SubjectAccessReviews,
		allowTTL:     o.AllowTTL,
		denyTTL:      o.DenyTTL,
		alwaysPaths:  slices.Clone(o.AlwaysAllowPaths),
		alwaysGroups: slices.Clone(o.AlwaysAllowGroups),
		answers:      cache.NewLRUExpireCache(cacheSize),
		backoff:      reviewBackoff,
	}
	if z.allowTTL <= 0 {
		z.allowTTL = 10 * time.Second
	}
	if z.denyTTL <= 0 {
		z.denyTTL = 10 * time.Second
	}
	return z
}

// decision is a SubjectAccessReview's answer as cached.
type decision struct {
	allowed bool
	reason  string
}

// Authorize tells whether attrs may be done. Always-allowed paths (non-resource requests only) and
// groups are allowed without asking; everything else is a SubjectAccessReview, whose answer is reused
// for AllowTTL or DenyTTL. err is set, and allowed false, when the API server could not be asked.
func (z *Authorizer) Authorize(ctx context.Context, attrs Attributes) (allowed bool, reason string, err error) {
	if attrs.User == nil {
		return false, "", errors.New("authorize: no user")
	}
	if !attrs.ResourceRequest && slices.Contains(z.alwaysPaths, attrs.Path) {
		return true, fmt.Sprintf("path %s is always allowed", attrs.Path), nil
	}
	if i := slices.IndexFunc(attrs.User.Groups, func(g string) bool { return slices.Contains(z.alwaysGroups, g) }); i >= 0 {
		return true, fmt.Sprintf("group %s is always allowed", attrs.User.Groups[i]), nil
	}
	if z.reviews == nil {
		return false, "", errors.New("authorize: no SubjectAccessReview client")
	}
	spec := accessReviewSpec(attrs)
	keyJSON, err := json.Marshal(spec)
	if err != nil {
		return false, "", err
	}
	key := string(keyJSON)
	if v, ok := z.answers.Get(key); ok {
		d := v.(decision)
		return d.allowed, d.reason, nil
	}
	d, err := z.review(ctx, spec)
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview failed (the service account needs create on "+
			"subjectaccessreviews.authorization.k8s.io): %w", err)
	}
	ttl := z.denyTTL
	if d.allowed {
		ttl = z.allowTTL
	}
	z.answers.Add(key, d, ttl)
	return d.allowed, d.reason, nil
}

// review asks the API server.
func (z *Authorizer) review(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (decision, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: spec}
	var status authorizationv1.SubjectAccessReviewStatus
	err := withRetry(ctx, z.backoff, func(ctx context.Context) error {
		got, err := z.reviews.Create(ctx, sar, metav1.CreateOptions{})
		if err == nil {
			status = got.Status
		}
		return err
	})
	if err != nil {
		return decision{}, err
	}
	reason := status.Reason
	if status.EvaluationError != "" {
		reason = fmt.Sprintf("%s (evaluation error: %s)", reason, status.EvaluationError)
	}
	return decision{allowed: status.Allowed && !status.Denied, reason: reason}, nil
}

// accessReviewSpec is the SubjectAccessReview for attrs. It is also the cache key: it holds every
// attribute and the whole user.
func accessReviewSpec(attrs Attributes) authorizationv1.SubjectAccessReviewSpec {
	u := attrs.User
	spec := authorizationv1.SubjectAccessReviewSpec{User: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	for k, v := range u.Extra {
		if spec.Extra == nil {
			spec.Extra = map[string]authorizationv1.ExtraValue{}
		}
		spec.Extra[k] = slices.Clone(v)
	}
	if attrs.ResourceRequest {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace:   attrs.Namespace,
			Verb:        attrs.Verb,
			Group:       attrs.Group,
			Version:     attrs.Version,
			Resource:    attrs.Resource,
			Subresource: attrs.Subresource,
			Name:        attrs.Name,
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: attrs.Path, Verb: attrs.Verb}
	}
	return spec
}
