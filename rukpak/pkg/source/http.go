package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

const (
	httpURLField = "spec.source.http.url"
	// maxHTTPRedirects is how many redirects in a row one download follows.
	maxHTTPRedirects = 5
)

// unpackHTTP downloads a .tar.gz/.tgz/.tar archive (extracted) or a single file (stored under its
// base name). When the key already holds content from the same URL, the request carries
// If-None-Match / If-Modified-Since and a 304 answer reuses it.
func (u *DiskUnpacker) unpackHTTP(ctx context.Context, key string, spec rukpakv1alpha1.HTTPSource, opts Options) (*Result, error) {
	what := fmt.Sprintf("URL %q", spec.URL)
	target, err := url.Parse(spec.URL)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, newError(KindInvalidSource, err, "%s is not an absolute http:// or https:// URL (check %s)", what, httpURLField)
	}
	archive := isArchivePath(target.Path)
	fileName := path.Base(target.Path)
	if !archive && (fileName == "/" || fileName == "." || fileName == "" || fileName == "..") {
		return nil, newError(KindInvalidSource, nil, "%s does not end in a file name to store the download under (check %s: a .tar.gz archive or a file such as catalog.json)", what, httpURLField)
	}
	client, err := u.httpClient(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()

	fingerprint := "http\x00" + spec.URL
	prev := u.cache.lookup(key)
	if prev != nil && (prev.Fingerprint != fingerprint || prev.Resolved.HTTP == nil) {
		prev = nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, spec.URL, nil)
	if err != nil {
		return nil, newError(KindInvalidSource, err, "%s: %v (check %s)", what, err, httpURLField)
	}
	req.Header.Set("User-Agent", "olmv1-source")
	if prev != nil {
		if prev.Resolved.HTTP.ETag != "" {
			req.Header.Set("If-None-Match", prev.Resolved.HTTP.ETag)
		}
		if prev.Resolved.HTTP.LastModified != "" {
			req.Header.Set("If-Modified-Since", prev.Resolved.HTTP.LastModified)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, classifyHTTPError(ctx, err, what, spec)
	}
	defer resp.Body.Close()

	if resp.StatusCode == http.StatusNotModified && prev != nil {
		return &Result{Dir: u.cache.abs(prev.Dir), ResolvedSource: prev.Resolved, Unchanged: sameResolved(opts.Previous, &prev.Resolved)}, nil
	}
	if err := httpStatusError(resp, what); err != nil {
		return nil, err
	}
	resolved := rukpakv1alpha1.ResolvedSource{
		Type: rukpakv1alpha1.SourceTypeHTTP,
		HTTP: &rukpakv1alpha1.ResolvedHTTPSource{
			URL:          resp.Request.URL.String(),
			ETag:         resp.Header.Get("ETag"),
			LastModified: resp.Header.Get("Last-Modified"),
		},
	}
	// A server that ignores If-None-Match but sends the same ETag still has the same content.
	if prev != nil && resolved.HTTP.ETag != "" && sameResolved(&prev.Resolved, &resolved) {
		return &Result{Dir: u.cache.abs(prev.Dir), ResolvedSource: prev.Resolved, Unchanged: sameResolved(opts.Previous, &resolved)}, nil
	}

	staged, err := u.cache.stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged)
	if err := u.writeHTTPBody(ctx, resp.Body, staged, what, archive, fileName, spec); err != nil {
		return nil, err
	}
	dir, err := u.cache.commitContent(key, staged, resolved, fingerprint)
	if err != nil {
		return nil, err
	}
	return &Result{Dir: dir, ResolvedSource: resolved}, nil
}

func (u *DiskUnpacker) writeHTTPBody(ctx context.Context, body io.Reader, staged, what string, archive bool, fileName string, spec rukpakv1alpha1.HTTPSource) error {
	c, err := openContentDir(staged, u.cfg.Limits, what)
	if err != nil {
		return err
	}
	defer c.close()
	streamErr := func(err error) *Error { return classifyHTTPError(ctx, err, what, spec) }
	if archive {
		var read int64
		if _, err := extractArchive(ctx, body, c, tarOptions{streamErr: streamErr}, &read); err != nil {
			return err
		}
		return c.finish()
	}
	if err := c.writeFile(fileName, body, 0o644); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Kind == KindUnreachable && e.Err != nil {
			return streamErr(e.Err)
		}
		return err
	}
	return nil
}

func isArchivePath(p string) bool {
	p = strings.ToLower(p)
	return strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") || strings.HasSuffix(p, ".tar")
}

// httpClient applies the source's TLS settings (caSecret, insecureSkipTLSVerify) to a clone of the
// base transport, and its redirect policy (redirectPolicy).
func (u *DiskUnpacker) httpClient(ctx context.Context, spec rukpakv1alpha1.HTTPSource, opts Options) (*http.Client, error) {
	tr := u.cfg.Transport.Clone()
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	if spec.CASecret != "" {
		secret, err := u.getSecret(ctx, opts.Namespace, spec.CASecret, "spec.source.http.caSecret")
		if err != nil {
			return nil, err
		}
		pool, err := caPool(secret, "spec.source.http.caSecret")
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	if spec.InsecureSkipTLSVerify {
		tr.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // asked for by spec.source.http.insecureSkipTLSVerify
	}
	return &http.Client{Transport: tr, CheckRedirect: redirectPolicy(spec)}, nil
}

// redirectPolicy follows at most maxHTTPRedirects redirects in a row, never from https to plain
// http, and only to the scheme, host and port of spec.url unless spec.allowRedirectsToOtherHosts.
// Its errors are *Error values, which http.Client returns wrapped in a *url.Error.
func redirectPolicy(spec rukpakv1alpha1.HTTPSource) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first, prev, next := via[0].URL, via[len(via)-1].URL, req.URL
		what := fmt.Sprintf("URL %q", spec.URL)
		if len(via) > maxHTTPRedirects {
			return newError(KindUnreachable, nil, "%s: the server redirected more than %d times in a row (the last redirect, from %q, was to %q): a redirect loop; will retry with backoff (check %s)",
				what, maxHTTPRedirects, showURL(prev), showURL(next), httpURLField)
		}
		if prev.Scheme == "https" && next.Scheme != "https" {
			return newError(KindInvalidSource, nil, "%s: %q redirected to %q, from https to plain http; such redirects are never followed (if plain http is acceptable, set %s to the http:// URL)",
				what, showURL(prev), showURL(next), httpURLField)
		}
		if !spec.AllowRedirectsToOtherHosts && !sameOrigin(first, next) {
			hint := "set spec.source.http.allowRedirectsToOtherHosts to true to follow it"
			if strings.EqualFold(first.Hostname(), next.Hostname()) && first.Scheme == "http" && next.Scheme == "https" {
				hint = fmt.Sprintf("set %s to the https:// URL, or %s", httpURLField, hint)
			}
			return newError(KindInvalidSource, nil, "%s: %q redirected to %q, on another host (scheme, host or port differ); redirects to other hosts are not followed unless allowed: %s",
				what, showURL(prev), showURL(next), hint)
		}
		return nil
	}
}

// showURL is u for messages: without credentials, and with its query (often a signature) elided.
func showURL(u *url.URL) string {
	c := *u
	c.User, c.Fragment, c.RawFragment = nil, "", ""
	if c.RawQuery != "" {
		c.RawQuery = "..."
	}
	return c.String()
}

// sameOrigin reports whether a and b have the same scheme, host and port (the default port of the
// scheme when none is given).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func httpStatusError(resp *http.Response, what string) *Error {
	code := resp.StatusCode
	status := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return newError(KindNotFound, nil, "%s not found (%s) (check %s)", what, status, httpURLField)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return newError(KindUnauthorized, nil, "%s: the server refused access (%s); HTTP sources are fetched without credentials, so the URL must be readable anonymously (check %s)", what, status, httpURLField)
	case code == http.StatusTooManyRequests || code >= 500:
		var ra time.Duration
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			ra = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		e := newError(KindUnreachable, nil, "%s: the server answered %s; %s", what, status, retryLater(ra))
		e.RetryAfter = ra
		return e
	}
	return newError(KindUnreachable, nil, "%s: unexpected answer %s (expected 200 OK; check %s)", what, status, httpURLField)
}

func classifyHTTPError(ctx context.Context, err error, what string, spec rukpakv1alpha1.HTTPSource) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ctx.Err() != nil {
		return timeoutError(ctx, err, timeoutOf(ctx), what, httpURLField)
	}
	if isTLSError(err) {
		hint := "set spec.source.http.caSecret to a Secret whose ca.crt holds the server's CA"
		if spec.CASecret != "" {
			hint = fmt.Sprintf("check that ca.crt of Secret %q (spec.source.http.caSecret) holds the CA that signed the server's certificate", spec.CASecret)
		}
		return newError(KindUnreachable, err, "%s: the server's TLS certificate is not trusted: %v (%s)", what, err, hint)
	}
	var nerr net.Error
	if errors.As(err, &nerr) || strings.Contains(err.Error(), "connection refused") {
		return newError(KindUnreachable, err, "cannot reach %s: %v", what, err)
	}
	return newError(KindUnreachable, err, "fetching %s: %v", what, err)
}
