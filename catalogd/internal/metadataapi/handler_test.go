package metadataapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// The tests in this file send requests through the real request handling of the CatalogMetadata
// API server (the handler NewServer serves, with the same scheme, field label conversion and REST),
// served on a loopback httptest server. Authentication and authorization are left out: NewServer
// delegates them to kube-apiserver, which the integration tests in catalogd/test/integration and
// the e2e suite exercise.

const metadataPath = "/apis/metadata.catalogd.operatorframework.io/v1alpha1/catalogmetadata"

// apiServer is one catalogd process's metadata API over a hub.
type apiServer struct {
	url     string
	handler *handler
	hub     *Hub
	reader  *memReader
}

func startAPIServer(t *testing.T, catalogs map[string][]Blob) *apiServer {
	t.Helper()
	r := &memReader{catalogs: catalogs}
	hub, err := NewHub(r)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := apiScheme()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := newOpenAPIDocs()
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(NewREST(hub), scheme, docs, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &apiServer{url: ts.URL, handler: h, hub: hub, reader: r}
}

// demoCatalogs is the content of the tests: 10 objects in two catalogs.
func demoCatalogs() map[string][]Blob {
	return map[string][]Blob{
		"alpha": append(demoBlobs("foo", "1.0.0", "1.1.0"), demoBlobs("bar", "2.0.0")...),
		"beta":  demoBlobs("foo", "3.0.0"),
	}
}

// response is an HTTP answer: its status code and, for errors, the metav1.Status.
type response struct {
	code   int
	status metav1.Status
	list   metadatav1alpha1.CatalogMetadataList
	body   string
}

// get sends GET metadataPath?query and reads the answer. Watches are read until the first event
// (or the end of the stream): enough to see whether the watch started.
func (s *apiServer) get(t *testing.T, query url.Values) response {
	t.Helper()
	u := s.url + metadataPath
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := response{code: resp.StatusCode}
	var body []byte
	if query.Get("watch") == "true" && resp.StatusCode == http.StatusOK {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil && err != io.EOF {
			t.Fatalf("reading the first watch event: %v", err)
		}
		out.body = ev.Type
		return out
	}
	if body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	out.body = string(body)
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(body, &out.status); err != nil {
			t.Fatalf("%s: status %d with a body that is not a Status: %s", u, resp.StatusCode, body)
		}
		return out
	}
	if err := json.Unmarshal(body, &out.list); err != nil {
		t.Fatalf("%s: %v: %s", u, err, body)
	}
	return out
}

func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// expectError checks an error answer: its HTTP status, its Status reason and a fragment of its
// message.
func expectError(t *testing.T, got response, code int, reason metav1.StatusReason, message string) {
	t.Helper()
	if got.code != code || got.status.Code != int32(code) || got.status.Reason != reason || !strings.Contains(got.status.Message, message) {
		t.Errorf("got %d %s %q, want %d %s with a message containing %q", got.code, got.status.Reason, got.status.Message, code, reason, message)
		return
	}
	t.Logf("%d %s: %s", got.code, got.status.Reason, got.status.Message)
}

func listNames(l metadatav1alpha1.CatalogMetadataList) []string {
	out := make([]string, len(l.Items))
	for i, item := range l.Items {
		out[i] = item.Name
	}
	return out
}

// TestHTTPMalformedContinueTokens: a continue token catalogd cannot have issued is 400 Bad Request
// saying what is wrong with it and what to do.
func TestHTTPMalformedContinueTokens(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	first := s.get(t, q("limit", "2"))
	if first.code != http.StatusOK || first.list.Continue == "" {
		t.Fatalf("first page: %d %s", first.code, first.body)
	}
	b64 := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
	ok := func(tok continueToken) string { return tok.encode() }
	valid := func() continueToken {
		raw, _ := base64.RawURLEncoding.DecodeString(first.list.Continue)
		var tok continueToken
		if err := json.Unmarshal(raw, &tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		name, token, want string
		extra             url.Values
	}{
		{name: "not base64url", token: "not-a-token!", want: "invalid continue token: not unpadded base64url"},
		{name: "padded base64", token: first.list.Continue + "==", want: "invalid continue token: not unpadded base64url"},
		{name: "standard base64 alphabet", token: "a+b/c", want: "invalid continue token: not unpadded base64url"},
		{name: "NUL and control characters", token: "\x00\x01\x7f", want: "invalid continue token: not unpadded base64url"},
		{name: "non-ASCII", token: "é✓\u202e", want: "invalid continue token: not unpadded base64url"},
		{name: "base64 of garbage", token: b64("\xff\xfe garbage"), want: "invalid continue token: not a catalogd token"},
		{name: "base64 of JSON that is not an object", token: b64(`[1,2,3]`), want: "invalid continue token: not a catalogd token"},
		{name: "an empty object", token: b64(`{}`), want: "invalid continue token: format 0, this catalogd issues format 1"},
		{name: "another format", token: b64(`{"v":99,"rv":"0123456789abcdef"}`), want: "format 99"},
		{name: "versions that are not catalogd's", token: ok(func() continueToken { c := valid(); c.RV = "12345"; return c }()), want: "its versions are not catalogd resourceVersions"},
		{name: "no catalog", token: ok(func() continueToken { c := valid(); c.Catalog = ""; return c }()), want: "it names no position"},
		{name: "negative offset", token: ok(func() continueToken { c := valid(); c.Offset = -5; return c }()), want: "it names no position"},
		{name: "an offset beyond int64", token: b64(strings.Replace(string(mustJSON(t, valid())), `"o":`, `"o":99999999999999999999999,"x":`, 1)), want: "not a catalogd token"},
		{name: "a huge token", token: strings.Repeat("A", 1<<20), want: "invalid continue token"},
		{name: "issued for other selectors", token: first.list.Continue, extra: q("labelSelector", "catalog=beta"), want: "issued for other label or field selectors"},
		{name: "with a resourceVersion", token: first.list.Continue, extra: q("resourceVersion", first.list.ResourceVersion), want: "specifying resourceVersion is not allowed when using continue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			query := q("limit", "2", "continue", tc.token)
			for k, v := range tc.extra {
				query[k] = v
			}
			expectError(t, s.get(t, query), http.StatusBadRequest, metav1.StatusReasonBadRequest, tc.want)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHTTPContinueFromContentNoLongerServedIsGone: a continue token of a list whose content is no
// longer served (it changed, or the replica, after a restart, serves other content) is 410 Gone;
// on a replica restarted over the same content it continues.
func TestHTTPContinueFromContentNoLongerServedIsGone(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	first := s.get(t, q("limit", "2"))
	if first.code != http.StatusOK || first.list.Continue == "" {
		t.Fatalf("first page: %d %s", first.code, first.body)
	}

	t.Run("a restart over the same content continues", func(t *testing.T) {
		again := startAPIServer(t, demoCatalogs())
		rest := again.get(t, q("limit", "100", "continue", first.list.Continue))
		if rest.code != http.StatusOK || len(rest.list.Items) != 8 || rest.list.ResourceVersion != first.list.ResourceVersion {
			t.Fatalf("continued on a restarted replica with the same content: %d, %d items at %q", rest.code, len(rest.list.Items), rest.list.ResourceVersion)
		}
	})
	t.Run("a restart with other content", func(t *testing.T) {
		other := demoCatalogs()
		other["alpha"] = demoBlobs("foo", "9.9.9")
		restarted := startAPIServer(t, other)
		expectError(t, restarted.get(t, q("limit", "2", "continue", first.list.Continue)), http.StatusGone, metav1.StatusReasonExpired,
			`the content of catalog "alpha" or of a later catalog this list covers changed since the list began (or this replica serves other content): list again without continue`)
	})
	t.Run("a replica serving none of the list's catalogs", func(t *testing.T) {
		empty := startAPIServer(t, map[string][]Blob{})
		expectError(t, empty.get(t, q("limit", "2", "continue", first.list.Continue)), http.StatusGone, metav1.StatusReasonExpired, "list again without continue")
	})
	t.Run("the content changed on the same replica", func(t *testing.T) {
		s.reader.set("beta", demoBlobs("foo", "3.0.0", "3.1.0"))
		if err := s.hub.Sync(); err != nil {
			t.Fatal(err)
		}
		expectError(t, s.get(t, q("limit", "2", "continue", first.list.Continue)), http.StatusGone, metav1.StatusReasonExpired, "list again without continue")
	})
	t.Run("a forged token naming a catalog nobody serves", func(t *testing.T) {
		var tok continueToken
		raw, _ := base64.RawURLEncoding.DecodeString(first.list.Continue)
		if err := json.Unmarshal(raw, &tok); err != nil {
			t.Fatal(err)
		}
		tok.Catalog = strings.Repeat("\u202e", 5000)
		expectError(t, s.get(t, q("limit", "2", "continue", tok.encode())), http.StatusGone, metav1.StatusReasonExpired,
			`the content of catalog "\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e\u202e"… (15000 bytes) or of a later catalog`)
	})
	t.Run("a token of an older catalogd", func(t *testing.T) {
		old := base64.RawURLEncoding.EncodeToString([]byte(`{"c":"alpha","o":2,"v":7}`))
		expectError(t, s.get(t, q("limit", "2", "continue", old)), http.StatusGone, metav1.StatusReasonExpired, "continue token from an older catalogd")
	})
}

// TestHTTPMalformedResourceVersions: a resourceVersion catalogd cannot have issued is 400 Bad
// Request on list, watch and get.
func TestHTTPMalformedResourceVersions(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	all := s.get(t, nil)
	if all.code != http.StatusOK || len(all.list.Items) != 10 {
		t.Fatalf("list: %d %s", all.code, all.body)
	}
	object := all.list.Items[0].Name
	for _, rv := range []string{
		"yesterday", "-1", "+1", "1e3", "0x10", " 1", "1 ", "1.5",
		"0123456789ABCDEF",  // upper case
		"0123456789abcde",   // 15 digits
		"0123456789abcdef0", // 17 digits
		"123456789012345678901",
		"' OR 1=1 --", "\x00", "\u200b", "\u202e1234567890abcdef", "é",
		strings.Repeat("9", 4096),
	} {
		t.Run(fmt.Sprintf("%.40q", rv), func(t *testing.T) {
			want := fmt.Sprintf("invalid resourceVersion %q: catalogd's resourceVersions are 16 lowercase hexadecimal digits", rv)
			if len(rv) > 64 {
				// A long value is quoted in part.
				want = fmt.Sprintf("invalid resourceVersion %q… (%d bytes): catalogd's resourceVersions are 16 lowercase hexadecimal digits", rv[:64], len(rv))
			}
			expectError(t, s.get(t, q("resourceVersion", rv)), http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
			expectError(t, s.get(t, q("watch", "true", "resourceVersion", rv)), http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
			got := s.getObject(t, object, q("resourceVersion", rv))
			expectError(t, got, http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
		})
	}
}

// getObject sends GET metadataPath/name?query.
func (s *apiServer) getObject(t *testing.T, name string, query url.Values) response {
	t.Helper()
	resp, body := roundTrip(t, http.MethodGet, s.url+metadataPath+"/"+url.PathEscape(name)+"?"+query.Encode())
	out := response{code: resp.StatusCode, body: string(body)}
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(body, &out.status); err != nil {
			t.Fatalf("status %d with a body that is not a Status: %s", resp.StatusCode, body)
		}
	}
	return out
}

// TestHTTPResourceVersionsNotServedAreGone: a well-formed resourceVersion of content this replica
// does not serve or retain (another replica's other content, before a restart with other content,
// an object's resourceVersion, an older catalogd's counter) is 410 Gone for list and watch; the
// current one and one retained from before a change are served.
func TestHTTPResourceVersionsNotServedAreGone(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	before := s.get(t, nil)
	if before.code != http.StatusOK {
		t.Fatalf("list: %d %s", before.code, before.body)
	}
	other := demoCatalogs()
	other["alpha"] = demoBlobs("foo", "9.9.9")
	elsewhere := startAPIServer(t, other).get(t, nil)
	if elsewhere.code != http.StatusOK || elsewhere.list.ResourceVersion == before.list.ResourceVersion {
		t.Fatalf("other content: %d at %q", elsewhere.code, elsewhere.list.ResourceVersion)
	}
	const gone = "is not a state of the catalog content this catalogd replica serves or retains"
	for _, tc := range []struct {
		name, rv, want string
	}{
		{name: "another replica's other content", rv: elsewhere.list.ResourceVersion, want: gone},
		{name: "an object's resourceVersion", rv: before.list.Items[0].ResourceVersion, want: gone},
		{name: "well-formed but never issued", rv: "0123456789abcdef", want: gone},
		{name: "an older catalogd's counter", rv: "12345", want: "comes from an older catalogd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectError(t, s.get(t, q("watch", "true", "resourceVersion", tc.rv)), http.StatusGone, metav1.StatusReasonExpired, tc.want)
			expectError(t, s.get(t, q("resourceVersion", tc.rv, "resourceVersionMatch", "NotOlderThan")), http.StatusGone, metav1.StatusReasonExpired, tc.want)
		})
	}

	// The content changes: the state before is retained, so a watch from it starts (and sends
	// the changes since); a list at it must be exact only for resourceVersionMatch=Exact.
	s.reader.set("beta", demoBlobs("foo", "3.0.0", "3.1.0"))
	if err := s.hub.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := s.get(t, q("watch", "true", "resourceVersion", before.list.ResourceVersion)); got.code != http.StatusOK || got.body != "ADDED" {
		t.Errorf("watch from the retained state before the change: %d, first event %q, want 200 and ADDED", got.code, got.body)
	}
	expectError(t, s.get(t, q("resourceVersion", before.list.ResourceVersion, "resourceVersionMatch", "Exact")), http.StatusGone, metav1.StatusReasonExpired,
		"is not the current state: catalogd serves lists only at the current state")

	// A restart with other content: the old state is neither served nor retained.
	restarted := startAPIServer(t, other)
	expectError(t, restarted.get(t, q("watch", "true", "resourceVersion", before.list.ResourceVersion)), http.StatusGone, metav1.StatusReasonExpired, gone)
}

// TestHTTPLimits: any int64 limit is accepted (0 and negative values mean no limit, as in
// kube-apiserver); a value that is not an int64 (too large, not a number, empty) is 400 Bad
// Request naming the parameter.
func TestHTTPLimits(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	for _, tc := range []struct {
		limit string
		items int
		more  bool
	}{
		{limit: "0", items: 10},
		{limit: "-1", items: 10},
		{limit: "-9223372036854775808", items: 10},
		{limit: "1", items: 1, more: true},
		{limit: "9", items: 9, more: true},
		{limit: "10", items: 10},
		{limit: "2147483648", items: 10},
		{limit: "9223372036854775807", items: 10},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			got := s.get(t, q("limit", tc.limit))
			if got.code != http.StatusOK || len(got.list.Items) != tc.items || (got.list.Continue != "") != tc.more {
				t.Fatalf("limit=%s: %d, %d items, continue %q; want %d items, continue %v", tc.limit, got.code, len(got.list.Items), got.list.Continue, tc.items, tc.more)
			}
		})
	}
	for _, limit := range []string{"9223372036854775808", "99999999999999999999999999", "ten", "1.5", "0x10", "", " 1", "\x00"} {
		t.Run(fmt.Sprintf("%q", limit), func(t *testing.T) {
			want := fmt.Sprintf("invalid limit %q: want the page size, an integer up to 9223372036854775807 (0 or none: no limit)", limit)
			expectError(t, s.get(t, url.Values{"limit": {limit}}), http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
			expectError(t, s.get(t, url.Values{"limit": {limit}, "watch": {"true"}}), http.StatusBadRequest, metav1.StatusReasonBadRequest, want)
		})
	}
	expectError(t, s.get(t, q("watch", "true", "timeoutSeconds", "forever")), http.StatusBadRequest, metav1.StatusReasonBadRequest,
		`invalid timeoutSeconds "forever": want a number of seconds`)
	// Paging with the largest page size there is returns everything in one page.
	var names []string
	cont := ""
	for page := 0; page < 10; page++ {
		got := s.get(t, q("limit", "3", "continue", cont))
		if got.code != http.StatusOK {
			t.Fatalf("page %d: %d %s", page, got.code, got.body)
		}
		names = append(names, listNames(got.list)...)
		if cont = got.list.Continue; cont == "" {
			break
		}
	}
	if all := s.get(t, q("limit", "9223372036854775807")); strings.Join(listNames(all.list), ",") != strings.Join(names, ",") {
		t.Errorf("pages of 3 gave %v, one page gave %v", names, listNames(all.list))
	}
}

// TestHTTPMalformedSelectors: label and field selectors that do not parse, or name fields the API
// has no selector for, are 400 Bad Request saying so; well-formed ones that match nothing give an
// empty list.
func TestHTTPMalformedSelectors(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	for _, tc := range []struct {
		name, param, value, want string
	}{
		{name: "unterminated set", param: "labelSelector", value: "catalog in (alpha", want: "unable to parse requirement"},
		{name: "no key", param: "labelSelector", value: "=alpha", want: "found '=', expected: !, identifier, or 'end of string'"},
		{name: "invalid label value", param: "labelSelector", value: "catalog=" + strings.Repeat("a", 64), want: "must be no more than 63 bytes"},
		{name: "label value with a zero-width space", param: "labelSelector", value: "catalog=al\u200bpha", want: "a valid label must be an empty string or consist of alphanumeric characters"},
		{name: "label key with NUL", param: "labelSelector", value: "cata\x00log=alpha", want: "unable to parse requirement: found 'log'"},
		{name: "unsupported field", param: "fieldSelector", value: "spec.version=1.0.0", want: `field selector "spec.version" is not supported for catalogmetadata (use metadata.name, spec.catalog, spec.schema, spec.package or spec.name)`},
		{name: "unsupported metadata field", param: "fieldSelector", value: "metadata.namespace=default", want: `field selector "metadata.namespace" is not supported for catalogmetadata`},
		{name: "field without a value", param: "fieldSelector", value: "spec.catalog", want: "invalid selector: 'spec.catalog'; can't understand 'spec.catalog'"},
		{name: "unknown operator", param: "fieldSelector", value: "spec.catalog~=alpha", want: `field selector "spec.catalog~" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectError(t, s.get(t, url.Values{tc.param: {tc.value}}), http.StatusBadRequest, metav1.StatusReasonBadRequest, tc.want)
			expectError(t, s.get(t, url.Values{tc.param: {tc.value}, "watch": {"true"}}), http.StatusBadRequest, metav1.StatusReasonBadRequest, tc.want)
		})
	}
	for _, tc := range []struct{ param, value string }{
		{"labelSelector", "catalog=gamma"},
		{"fieldSelector", "spec.catalog=gamma"},
		{"fieldSelector", "spec.package=f\u00f6\u00f6"},
		{"fieldSelector", "spec.name=" + strings.Repeat("x", 10000)},
	} {
		t.Run(tc.param+" "+tc.value[:min(len(tc.value), 30)], func(t *testing.T) {
			got := s.get(t, url.Values{tc.param: {tc.value}})
			if got.code != http.StatusOK || len(got.list.Items) != 0 {
				t.Errorf("%s=%.40q: %d with %d items, want 200 and an empty list", tc.param, tc.value, got.code, len(got.list.Items))
			}
		})
	}
}
