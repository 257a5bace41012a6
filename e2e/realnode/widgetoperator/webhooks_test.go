package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func serve(t *testing.T, h http.Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	return rec
}

func admissionReview(object string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
		"kind":{"group":"widgets.olmv1.io","version":"v1","kind":"Widget"},"operation":"CREATE","object":` + object + `}}`
}

func decodeAdmission(t *testing.T, rec *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	if review.Kind != "AdmissionReview" || review.APIVersion != "admission.k8s.io/v1" || review.Response == nil || review.Response.UID != "u-1" {
		t.Fatalf("bad review: %s", rec.Body)
	}
	return review.Response
}

func TestValidateHandler(t *testing.T) {
	h := validateHandler(logr.Discard())
	resp := decodeAdmission(t, serve(t, h, admissionReview(`{"apiVersion":"widgets.olmv1.io/v1","kind":"Widget","spec":{"size":11}}`)))
	if resp.Allowed || resp.Result == nil || resp.Result.Message != "widget-operator: spec.size must be between 0 and 10, got 11" {
		t.Errorf("want a refusal, got %+v", resp)
	}
	// An object without apiVersion is read as the version of the request's kind.
	resp = decodeAdmission(t, serve(t, h, admissionReview(`{"kind":"Widget","spec":{"size":3}}`)))
	if !resp.Allowed {
		t.Errorf("want allowed, got %+v", resp.Result)
	}
}

func TestMutateHandler(t *testing.T) {
	h := mutateHandler(logr.Discard())
	resp := decodeAdmission(t, serve(t, h, admissionReview(`{"apiVersion":"widgets.olmv1.io/v1","kind":"Widget","metadata":{"name":"w"},"spec":{}}`)))
	if !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("want an allowed JSONPatch, got %+v", resp)
	}
	want := `[{"op":"add","path":"/metadata/labels","value":{"widgets.olmv1.io/defaulted":"true"}},{"op":"add","path":"/spec/size","value":1}]`
	if string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}
	resp = decodeAdmission(t, serve(t, h, admissionReview(`{"apiVersion":"widgets.olmv1.io/v1","metadata":{"labels":{"widgets.olmv1.io/defaulted":"true"}},"spec":{"size":2}}`)))
	if !resp.Allowed || resp.PatchType != nil || len(resp.Patch) != 0 {
		t.Errorf("want allowed without patch, got %+v", resp)
	}
}

func TestConvertHandler(t *testing.T) {
	h := convertHandler(logr.Discard())
	rec := serve(t, h, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c-1",
		"desiredAPIVersion":"widgets.olmv1.io/v2","objects":[
		{"apiVersion":"widgets.olmv1.io/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"size":2}},
		{"apiVersion":"widgets.olmv1.io/v2","kind":"Widget","metadata":{"name":"b"},"spec":{"replicas":3}}]}}`)
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	r := review.Response
	if review.Kind != "ConversionReview" || r == nil || r.UID != "c-1" || r.Result.Status != "Success" || len(r.ConvertedObjects) != 2 {
		t.Fatalf("bad review: %s", rec.Body)
	}
	for i, want := range []string{
		`{"apiVersion":"widgets.olmv1.io/v2","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":2}}`,
		`{"apiVersion":"widgets.olmv1.io/v2","kind":"Widget","metadata":{"name":"b"},"spec":{"replicas":3}}`,
	} {
		if got := string(r.ConvertedObjects[i].Raw); got != want {
			t.Errorf("object %d: got %s, want %s", i, got, want)
		}
	}

	rec = serve(t, h, `{"request":{"uid":"c-2","desiredAPIVersion":"widgets.olmv1.io/v3","objects":[{"apiVersion":"widgets.olmv1.io/v1"}]}}`)
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	if review.Response.Result.Status != "Failure" || !strings.Contains(review.Response.Result.Message, `"widgets.olmv1.io/v3" is not a Widget version`) {
		t.Errorf("want a failure, got %+v", review.Response.Result)
	}
}

func TestHandlersRefuseGarbage(t *testing.T) {
	for name, h := range map[string]http.Handler{"validate": validateHandler(logr.Discard()), "convert": convertHandler(logr.Discard())} {
		if rec := serve(t, h, "not json"); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, rec.Code)
		}
		if rec := serve(t, h, "{}"); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d for a review without request, want 400", name, rec.Code)
		}
	}
}
