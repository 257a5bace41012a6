package delegatedauth

import (
	"crypto/x509"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// verifyClientCert verifies the request's TLS client certificate (with the intermediates it sent)
// against pool for client authentication.
func verifyClientCert(r *http.Request, pool *x509.CertPool) (*x509.Certificate, error) {
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:         pool,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, err
	}
	return certs[0], nil
}

// certOutcome is what the request's client certificate says.
type certOutcome struct {
	user *User
	// err rejects the certificate (a later bearer token may still authenticate the request).
	err error
}

// authenticateCert tries the front-proxy and then the client CA. A front-proxy certificate (one that
// verifies against the requestheader CA with an allowed name) without a user name header is neither a
// user nor an error, unless the client CA also trusts it. A certificate is an error only when some
// pool is configured and none accepts it.
func authenticateCert(r *http.Request, cfg *certConfig) certOutcome {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return certOutcome{}
	}
	var errs []string
	frontProxyVerified := false
	if fp := cfg.frontProxy; fp != nil {
		u, verified, err := fp.authenticate(r)
		if u != nil {
			return certOutcome{user: u}
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		frontProxyVerified = verified
	}
	if cfg.clientCA != nil {
		cert, err := verifyClientCert(r, cfg.clientCA)
		switch {
		case err == nil && cert.Subject.CommonName == "":
			return certOutcome{err: fmt.Errorf("%w: client certificate has no common name", ErrUnauthorized)}
		case err == nil:
			return certOutcome{user: &User{Name: cert.Subject.CommonName, Groups: slices.Clone(cert.Subject.Organization)}}
		default:
			errs = append(errs, "client CA: "+err.Error())
		}
	}
	if frontProxyVerified || len(errs) == 0 {
		return certOutcome{}
	}
	return certOutcome{err: fmt.Errorf("%w: client certificate not trusted (%s)", ErrUnauthorized, strings.Join(errs, "; "))}
}

// authenticate reads the user from the requestheader headers. verified tells whether the
// certificate is a front-proxy certificate: it verifies against the requestheader CA and its common
// name is allowed. One without a user name header returns no user and no error.
func (fp *frontProxyConfig) authenticate(r *http.Request) (u *User, verified bool, err error) {
	cert, err := verifyClientCert(r, fp.ca)
	if err != nil {
		return nil, false, fmt.Errorf("requestheader CA: %w", err)
	}
	if len(fp.allowedNames) > 0 && !slices.Contains(fp.allowedNames, cert.Subject.CommonName) {
		return nil, false, fmt.Errorf("front-proxy certificate common name %q is not in %s",
			cert.Subject.CommonName, keyAllowedNames)
	}
	name := firstHeader(r.Header, fp.usernameHeaders)
	if name == "" {
		return nil, true, nil
	}
	u = &User{
		Name:   name,
		UID:    firstHeader(r.Header, fp.uidHeaders),
		Groups: allHeaderValues(r.Header, fp.groupHeaders),
		Extra:  extraFromHeaders(r.Header, fp.extraPrefixes),
	}
	return u, true, nil
}

// firstHeader is the value of the first of names that is set and not empty.
func firstHeader(h http.Header, names []string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// allHeaderValues is every non-empty value of every header in names.
func allHeaderValues(h http.Header, names []string) []string {
	var out []string
	for _, n := range names {
		for _, v := range h.Values(n) {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// extraFromHeaders reads <prefix><key> headers: the key lower-cased, then percent-decoded (kube's
// encoding for characters that header names cannot hold); a key that does not decode is kept as is.
func extraFromHeaders(h http.Header, prefixes []string) map[string][]string {
	var extra map[string][]string
	for _, name := range slices.Sorted(maps.Keys(h)) {
		values := h[name]
		lower := strings.ToLower(name)
		for _, p := range prefixes {
			p = strings.ToLower(p)
			if p == "" || !strings.HasPrefix(lower, p) || len(lower) == len(p) {
				continue
			}
			key := lower[len(p):]
			if k, err := url.PathUnescape(key); err == nil {
				key = k
			}
			if extra == nil {
				extra = map[string][]string{}
			}
			extra[key] = append(extra[key], values...)
			break
		}
	}
	return extra
}
