package metadataapi

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// send sends method path with the headers (name, value pairs) and returns the answer and its body.
func (s *apiServer) send(t *testing.T, method, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return roundTrip(t, method, s.url+path, headers...)
}

// roundTrip sends one request and reads the answer as sent: no transparent decompression, no
// redirects followed.
func roundTrip(t *testing.T, method, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

// TestHTTPDiscovery: /apis, the group and the group version describe the one read-only resource,
// as kube-apiserver's aggregator and kubectl read them.
func TestHTTPDiscovery(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	resp, body := s.send(t, "GET", "/apis")
	groups := decode[metav1.APIGroupList](t, body)
	if resp.StatusCode != 200 || groups.Kind != "APIGroupList" || len(groups.Groups) != 1 || groups.Groups[0].PreferredVersion.GroupVersion != metadatav1alpha1.SchemeGroupVersion.String() {
		t.Errorf("/apis: %d %s", resp.StatusCode, body)
	}
	_, body = s.send(t, "GET", groupPath)
	if g := decode[metav1.APIGroup](t, body); g.Kind != "APIGroup" || g.Name != metadatav1alpha1.GroupName {
		t.Errorf("%s: %s", groupPath, body)
	}
	_, body = s.send(t, "GET", versionPath)
	list := decode[metav1.APIResourceList](t, body)
	if len(list.APIResources) != 1 {
		t.Fatalf("%s: %s", versionPath, body)
	}
	r := list.APIResources[0]
	if r.Name != "catalogmetadata" || r.Kind != "CatalogMetadata" || r.Namespaced || strings.Join(r.Verbs, ",") != "get,list,watch" {
		t.Errorf("resource: %+v", r)
	}
}

// TestHTTPForms: the Accept header picks the object, a kubectl Table (rows carrying metadata only
// unless includeObject says otherwise), metadata only, or YAML; anything else is 406.
func TestHTTPForms(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	path := metadataPath + "?labelSelector=catalog%3Dbeta"

	_, body := s.send(t, "GET", path, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	table := decode[metav1.Table](t, body)
	if table.Kind != "Table" || len(table.ColumnDefinitions) != 5 || len(table.Rows) != 3 || table.ResourceVersion == "" {
		t.Fatalf("table: %s", body)
	}
	if got := table.Rows[0].Cells; got[0] != "beta" || got[2] != "foo" {
		t.Errorf("row cells %v", got)
	}
	if row := decode[metav1.PartialObjectMetadata](t, table.Rows[0].Object.Raw); row.Kind != "PartialObjectMetadata" || row.Name == "" {
		t.Errorf("a row carries metadata by default: %s", table.Rows[0].Object.Raw)
	}
	_, body = s.send(t, "GET", path+"&includeObject=Object", "Accept", "application/json;as=Table;v=v1beta1;g=meta.k8s.io")
	table = decode[metav1.Table](t, body)
	if table.APIVersion != "meta.k8s.io/v1beta1" || !strings.Contains(string(table.Rows[0].Object.Raw), `"content"`) {
		t.Errorf("includeObject=Object: %s", body)
	}
	_, body = s.send(t, "GET", path+"&includeObject=None", "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if table = decode[metav1.Table](t, body); table.Rows[0].Object.Raw != nil {
		t.Errorf("includeObject=None: %s", body)
	}

	resp, body := s.send(t, "GET", path, "Accept", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
	meta := decode[metav1.PartialObjectMetadataList](t, body)
	if resp.Header.Get("Content-Type") != "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" || len(meta.Items) != 3 || meta.Items[0].Labels["catalog"] != "beta" || strings.Contains(string(body), `"content"`) {
		t.Errorf("metadata list: %s %s", resp.Header.Get("Content-Type"), body)
	}

	resp, body = s.send(t, "GET", path, "Accept", "application/yaml")
	var list metadatav1alpha1.CatalogMetadataList
	if err := yaml.Unmarshal(body, &list); err != nil || resp.Header.Get("Content-Type") != "application/yaml" || list.Kind != "CatalogMetadataList" || len(list.Items) != 3 {
		t.Errorf("yaml: %v %s", err, body)
	}

	resp, body = s.send(t, "GET", path, "Accept", "application/vnd.kubernetes.protobuf")
	if st := decode[metav1.Status](t, body); resp.StatusCode != http.StatusNotAcceptable || st.Reason != metav1.StatusReasonNotAcceptable {
		t.Errorf("protobuf only: %d %s", resp.StatusCode, body)
	}
	resp, _ = s.send(t, "GET", path, "Accept", "application/vnd.kubernetes.protobuf, application/json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("protobuf or JSON: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestHTTPErrors: unknown paths are 404 and writes are 405, as Status objects.
func TestHTTPErrors(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/apis/other.example.com/v1", 404},
		{"GET", versionPath + "/pods", 404},
		{"GET", metadataPath + "/a/b", 404},
		{"GET", metadataPath + "/nope", 404},
		{"POST", metadataPath, 405},
		{"DELETE", metadataPath + "/x", 405},
		{"PUT", metadataPath + "/x", 405},
	} {
		resp, body := s.send(t, tc.method, tc.path)
		st := decode[metav1.Status](t, body)
		if resp.StatusCode != tc.code || st.Code != int32(tc.code) || st.Kind != "Status" || st.Message == "" {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.code)
		}
	}
	if resp, body := s.send(t, "GET", "/healthz"); resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("/healthz: %d %s", resp.StatusCode, body)
	}
}

// TestHTTPLargeAnswersAreCompressed: an answer of 128 KiB or more is gzip-compressed for a client
// that accepts it, and only then.
func TestHTTPLargeAnswersAreCompressed(t *testing.T) {
	big := map[string][]Blob{"big": nil}
	for i := 0; i < 400; i++ {
		big["big"] = append(big["big"], demoBlobs("pkg"+strings.Repeat("x", i%7), "1.0."+strconv.Itoa(i))...)
	}
	s := startAPIServer(t, big)
	resp, plain := s.send(t, "GET", metadataPath)
	if resp.Header.Get("Content-Encoding") != "" || len(plain) < gzipAbove {
		t.Fatalf("without Accept-Encoding: %q, %d bytes", resp.Header.Get("Content-Encoding"), len(plain))
	}
	resp, zipped := s.send(t, "GET", metadataPath, "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || len(zipped) >= len(plain) {
		t.Fatalf("with gzip: %q, %d bytes", resp.Header.Get("Content-Encoding"), len(zipped))
	}
	zr, err := gzip.NewReader(strings.NewReader(string(zipped)))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if l := decode[metadatav1alpha1.CatalogMetadataList](t, unzipped); len(l.Items) != len(decode[metadatav1alpha1.CatalogMetadataList](t, plain).Items) {
		t.Errorf("the compressed list differs")
	}
	if resp, small := s.send(t, "GET", metadataPath+"?limit=1", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "" || !json.Valid(small) {
		t.Errorf("a small answer is not compressed: %q", resp.Header.Get("Content-Encoding"))
	}
}

// TestHTTPWatchForms: a watch streams one JSON event per line; kubectl get --watch gets each
// object as a one-row Table; a watch of one object by path sends only that object.
func TestHTTPWatchForms(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	all := s.get(t, nil)
	name := all.list.Items[3].Name
	for _, tc := range []struct {
		name, path, accept string
		check              func(t *testing.T, ev metav1.WatchEvent)
	}{
		{name: "objects", path: metadataPath + "?watch=true", check: func(t *testing.T, ev metav1.WatchEvent) {
			if o := decode[metadatav1alpha1.CatalogMetadata](t, ev.Object.Raw); o.Kind != "CatalogMetadata" || o.Spec.Content.Raw == nil {
				t.Errorf("event object: %s", ev.Object.Raw)
			}
		}},
		{name: "tables", path: metadataPath + "?watch=1", accept: "application/json;as=Table;v=v1;g=meta.k8s.io", check: func(t *testing.T, ev metav1.WatchEvent) {
			if tb := decode[metav1.Table](t, ev.Object.Raw); tb.Kind != "Table" || len(tb.Rows) != 1 {
				t.Errorf("event table: %s", ev.Object.Raw)
			}
		}},
		{name: "one object by path", path: versionPath + "/watch/catalogmetadata/" + name, check: func(t *testing.T, ev metav1.WatchEvent) {
			if o := decode[metadatav1alpha1.CatalogMetadata](t, ev.Object.Raw); o.Name != name {
				t.Errorf("watched %s, got %s", name, o.Name)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", s.url+tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%d", resp.StatusCode)
			}
			want := 10
			if tc.name == "one object by path" {
				want = 1
			}
			lines := bufio.NewScanner(resp.Body)
			lines.Buffer(nil, 1<<20)
			for i := 0; i < want && lines.Scan(); i++ {
				ev := decode[metav1.WatchEvent](t, lines.Bytes())
				if ev.Type != "ADDED" {
					t.Errorf("event %d: %s", i, lines.Bytes())
				}
				tc.check(t, ev)
			}
		})
	}
}

// TestHTTPMetrics: requests are counted by verb and code; open watches are a gauge.
func TestHTTPMetrics(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	count := func(verb, code string) uint64 {
		m := &dto.Metric{}
		if err := requestDuration.WithLabelValues(verb, code).(prometheus.Histogram).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	lists, gone, discovery := count("list", "200"), count("get", "404"), count("discovery", "200")
	s.get(t, nil)
	s.send(t, "GET", metadataPath+"/nope")
	s.send(t, "GET", "/apis")
	if count("list", "200") != lists+1 || count("get", "404") != gone+1 || count("discovery", "200") != discovery+1 {
		t.Errorf("list 200: %d→%d, get 404: %d→%d, discovery 200: %d→%d", lists, count("list", "200"), gone, count("get", "404"), discovery, count("discovery", "200"))
	}

	open := testutil.ToFloat64(openWatches)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.url+metadataPath+"?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(openWatches); got != open+1 {
		t.Errorf("open watches %v with one more open, want %v", got, open+1)
	}
	resp.Body.Close()
}

// TestStreamedListIsTheWholeEncoding: a list written item by item has the bytes of the list
// encoded whole, for objects and for metadata, empty or not (an empty list's items are [], never
// null, as kube-apiserver answers).
func TestStreamedListIsTheWholeEncoding(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	full := s.get(t, nil).list
	for _, l := range []*metadatav1alpha1.CatalogMetadataList{&full, {ListMeta: metav1.ListMeta{ResourceVersion: "0123456789abcdef", Continue: "x"}, Items: []metadatav1alpha1.CatalogMetadata{}}} {
		for _, f := range []form{{}, {as: "PartialObjectMetadataList", asVersion: "v1"}, {as: "PartialObjectMetadataList", asVersion: "v1beta1"}} {
			whole, err := f.convert(l.DeepCopyObject(), "")
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(whole)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			if err := encodeList(&got, f, l.DeepCopyObject().(*metadatav1alpha1.CatalogMetadataList)); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("%+v, %d items:\nstreamed %s\nwhole    %s", f, len(l.Items), got.String(), want)
			}
		}
	}
}

// TestMarshalObjectCopiesTheBlob: an object's encoding copies its blob in as stored; it is the same
// JSON as encoding/json's, which escapes '<', '>' and '&'.
func TestMarshalObjectCopiesTheBlob(t *testing.T) {
	for _, content := range []string{`{"a":1}`, `{"description":"<b>x & y</b>","n":[1,2]}`, ``} {
		m := newObject(&entry{catalog: "c", schema: "olm.bundle", pkg: "p", name: "n", object: "c.bundle.p.n", rv: "0123456789abcdef"}, nil)
		if content != "" {
			m.Spec.Content.Raw = []byte(content)
		}
		got, err := marshalObject(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) || (content != "" && !strings.Contains(string(got), content)) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// TestHTTPTooManyRequests: beyond maxInFlight gets and lists at once, a request is 429 with
// Retry-After (client-go retries it); watches and discovery are not limited.
func TestHTTPTooManyRequests(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	for i := 0; i < cap(s.handler.inFlight); i++ {
		s.handler.inFlight <- struct{}{}
	}
	resp, body := s.send(t, "GET", metadataPath)
	if st := decode[metav1.Status](t, body); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || st.Reason != metav1.StatusReasonTooManyRequests {
		t.Errorf("list while full: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := s.send(t, "GET", "/apis"); resp.StatusCode != http.StatusOK {
		t.Errorf("discovery while full: %d", resp.StatusCode)
	}
	if got := s.get(t, q("watch", "true")); got.code != http.StatusOK {
		t.Errorf("watch while full: %d", got.code)
	}
	<-s.handler.inFlight
	if got := s.get(t, nil); got.code != http.StatusOK {
		t.Errorf("list with a free slot: %d", got.code)
	}
}

// TestHTTPMetadataFormsReadNoBlobs: a list answered as a kubectl table (rows with metadata) or as
// metadata only reads no blob from the store; objects, and tables with includeObject=Object, do.
func TestHTTPMetadataFormsReadNoBlobs(t *testing.T) {
	s := startAPIServer(t, demoCatalogs())
	for _, tc := range []struct {
		query, accept string
		reads         int64
	}{
		{"", "application/json;as=Table;v=v1;g=meta.k8s.io", 0},
		{"?includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io", 0},
		{"", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", 0},
		{"?includeObject=Object", "application/json;as=Table;v=v1;g=meta.k8s.io", 10},
		{"", "application/json", 10},
	} {
		before := s.reader.contentReads.Load()
		resp, body := s.send(t, "GET", metadataPath+tc.query, "Accept", tc.accept)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", tc.accept, tc.query, resp.StatusCode, body)
		}
		if got := s.reader.contentReads.Load() - before; got != tc.reads {
			t.Errorf("%s %s: read %d blobs, want %d", tc.accept, tc.query, got, tc.reads)
		}
	}
}
