package delegatedauth

import (
	"errors"
	"slices"
)

// Well-known user and group names.
const (
	AnonymousUser        = "system:anonymous"
	UnauthenticatedGroup = "system:unauthenticated"
	AuthenticatedGroup   = "system:authenticated"
)

// ErrUnauthorized is wrapped by every error that rejects the request's credentials: a certificate
// that verifies against no trusted CA, a front-proxy certificate whose name is not allowed, a token
// the API server does not accept, or no credentials when anonymous requests are not allowed.
var ErrUnauthorized = errors.New("unauthorized")

// User is an authenticated (or anonymous) user, as the API server's authorizers see it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// anonymous is the user of a request without credentials.
func anonymous() *User {
	return &User{Name: AnonymousUser, Groups: []string{UnauthenticatedGroup}}
}

// withAuthenticatedGroup adds system:authenticated to u's groups unless u is anonymous or already
// in it (what kube-apiserver does for every authenticated user).
func withAuthenticatedGroup(u *User) *User {
	if u.Name == AnonymousUser || slices.Contains(u.Groups, AuthenticatedGroup) || slices.Contains(u.Groups, UnauthenticatedGroup) {
		return u
	}
	u.Groups = append(slices.Clip(u.Groups), AuthenticatedGroup)
	return u
}
