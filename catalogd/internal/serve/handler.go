// Package serve is catalogd's HTTP content endpoint:
//
//	GET|HEAD /catalogs/<name>/all.json                          the whole catalog, one JSON blob per line
//	GET|HEAD /catalogs/<name>/api/v1/metas?schema=&package=&name= the blobs matching every given filter
//
// Both answer with ETag (the content hash), Last-Modified, 304 Not Modified on a matching
// If-None-Match or If-Modified-Since, and gzip when the client accepts it. all.json also supports
// Range requests when not compressed. Content is streamed from the store's files, never buffered
// whole; metas queries are answered from the store's index.
package serve

import (
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// ContentType of both endpoints: newline-delimited JSON.
const ContentType = "application/jsonl"

// RequestDuration is catalogd_http_request_duration_seconds, by endpoint (all, metas, other) and code.
var RequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "catalogd_http_request_duration_seconds",
	Help:    "Duration of requests to catalogd's content endpoint, by endpoint (all, metas, other) and HTTP status code.",
	Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
}, []string{"endpoint", "code"})

// Handler serves the store's content.
type Handler struct {
	Store *storage.Store
}

// URLPath is the path of a catalog's all.json on the content endpoint.
func URLPath(catalog string) string { return "/catalogs/" + catalog + "/all.json" }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	endpoint := h.route(rw, r)
	RequestDuration.WithLabelValues(endpoint, strconv.Itoa(rw.code)).Observe(time.Since(start).Seconds())
}

// route serves one request in steps: parsePath → method check → open the catalog's content →
// conditional headers (304) → writeBody. It returns the endpoint label of the request metric.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) string {
	name, endpoint, ok := parsePath(w, r)
	if !ok {
		return endpoint
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return endpoint
	}
	c, ok := h.Store.Get(name)
	if !ok {
		http.Error(w, "catalog \""+name+"\" is not served (it does not exist or has not been unpacked yet: see kubectl get catalog "+name+")", http.StatusNotFound)
		return endpoint
	}
	f, err := c.Open()
	if err != nil {
		// Replaced between Get and Open: the client retries and gets the new content.
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return endpoint
	}
	defer f.Close()

	hdr := w.Header()
	hdr.Set("ETag", `"`+c.Hash+`"`)
	hdr.Set("Last-Modified", c.Modified.UTC().Format(http.TimeFormat))
	hdr.Set("Content-Type", ContentType)
	hdr.Set("Vary", "Accept-Encoding")
	hdr.Set("Cache-Control", "no-cache")
	if notModified(r, c.Hash, c.Modified) {
		w.WriteHeader(http.StatusNotModified)
		return endpoint
	}
	writeBody(w, r, endpoint, c, f)
	return endpoint
}

// parsePath reads /catalogs/<name>/<endpoint>. When the path names no endpoint it answers 404 and
// ok is false (endpoint is then "other").
func parsePath(w http.ResponseWriter, r *http.Request) (name, endpoint string, ok bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/catalogs/")
	if !ok {
		http.NotFound(w, r)
		return "", "other", false
	}
	name, sub, ok := strings.Cut(rest, "/")
	if !ok || name == "" {
		http.NotFound(w, r)
		return "", "other", false
	}
	switch sub {
	case "all.json":
		return name, "all", true
	case "api/v1/metas":
		return name, "metas", true
	}
	http.Error(w, "unknown path: use /catalogs/<name>/all.json or /catalogs/<name>/api/v1/metas?schema=&package=&name=", http.StatusNotFound)
	return "", "other", false
}

// writeBody answers 200 with the whole catalog (all) or the blobs the query selects (metas) from
// f, c's open content: gzipped when the client accepts it, else with Content-Length (and, for all,
// Range support). HEAD gets the headers only.
func writeBody(w http.ResponseWriter, r *http.Request, endpoint string, c *storage.Content, f *os.File) {
	var entries []storage.Entry
	if endpoint == "metas" {
		q := r.URL.Query()
		entries = c.Query(q.Get("schema"), q.Get("package"), q.Get("name"))
	}
	hdr := w.Header()
	if acceptsGzip(r) {
		hdr.Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if endpoint == "all" {
			_, _ = io.Copy(gz, f)
		} else {
			_ = storage.WriteEntries(gz, f, entries)
		}
		_ = gz.Close()
		return
	}
	if endpoint == "all" {
		// ServeContent adds Content-Length and Range support; its own conditional checks agree with ours.
		http.ServeContent(w, r, "", c.Modified, f)
		return
	}
	var n int64
	for _, e := range entries {
		n += e.Length + 1
	}
	hdr.Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_ = storage.WriteEntries(w, f, entries)
	}
}

// notModified implements If-None-Match (which wins) and If-Modified-Since for GET and HEAD.
func notModified(r *http.Request, hash string, modified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == `"`+hash+`"` {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil && !modified.Truncate(time.Second).After(t) {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}

type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}
