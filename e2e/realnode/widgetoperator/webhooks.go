package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The paths the webhooks are served at (the CSV's webhookdefinitions name them).
const (
	ValidatePath = "/validate-widget"
	MutatePath   = "/mutate-widget"
	ConvertPath  = "/convert"
)

// maxReviewBytes bounds a request body; the API server sends far less.
const maxReviewBytes = 8 << 20

// validateHandler serves the validating webhook: it refuses a Widget whose size is out of range.
func validateHandler(log logr.Logger) http.Handler {
	return admissionHandler(log.WithName("validate"), func(obj map[string]any) *admissionv1.AdmissionResponse {
		if err := validateWidget(obj); err != nil {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
				Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonInvalid, Code: http.StatusUnprocessableEntity,
			}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
}

// mutateHandler serves the mutating webhook: it labels the Widget and defaults its size.
func mutateHandler(log logr.Logger) http.Handler {
	return admissionHandler(log.WithName("mutate"), func(obj map[string]any) *admissionv1.AdmissionResponse {
		ops, err := defaultWidget(obj)
		if err != nil {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
				Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonBadRequest, Code: http.StatusBadRequest,
			}}
		}
		resp := &admissionv1.AdmissionResponse{Allowed: true}
		if len(ops) > 0 {
			patch, err := json.Marshal(ops)
			if err != nil {
				return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: http.StatusInternalServerError}}
			}
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
		}
		return resp
	})
}

// admissionHandler decodes an admission.k8s.io/v1 AdmissionReview, passes the object to decide
// and writes decide's response back with the request's UID.
func admissionHandler(log logr.Logger, decide func(obj map[string]any) *admissionv1.AdmissionResponse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := readJSON(r, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := review.Request
		if req == nil {
			http.Error(w, "widget-operator: the AdmissionReview has no request", http.StatusBadRequest)
			return
		}
		var resp *admissionv1.AdmissionResponse
		obj, err := decodeObject(req.Object.Raw)
		if err == nil {
			if _, ok := obj["apiVersion"].(string); !ok {
				obj["apiVersion"] = req.Kind.Group + "/" + req.Kind.Version
			}
			resp = decide(obj)
		} else {
			resp = &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: http.StatusBadRequest}}
		}
		resp.UID = req.UID
		log.V(1).Info("admission", "operation", req.Operation, "namespace", req.Namespace, "name", req.Name,
			"version", req.Kind.Version, "allowed", resp.Allowed, "patched", len(resp.Patch) > 0)
		writeJSON(w, log, &admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Response: resp,
		})
	})
}

// convertHandler serves the CRD conversion webhook (an apiextensions.k8s.io/v1 ConversionReview).
func convertHandler(log logr.Logger) http.Handler {
	log = log.WithName("convert")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := readJSON(r, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := review.Request
		if req == nil {
			http.Error(w, "widget-operator: the ConversionReview has no request", http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		converted, err := convertAll(req.Objects, req.DesiredAPIVersion)
		if err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		} else {
			resp.ConvertedObjects = converted
		}
		log.V(1).Info("conversion", "to", req.DesiredAPIVersion, "objects", len(req.Objects), "error", resp.Result.Message)
		writeJSON(w, log, &apiextensionsv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
			Response: resp,
		})
	})
}

// convertAll converts each object to apiVersion to.
func convertAll(objs []runtime.RawExtension, to string) ([]runtime.RawExtension, error) {
	out := make([]runtime.RawExtension, 0, len(objs))
	for i, raw := range objs {
		obj, err := decodeObject(raw.Raw)
		if err == nil {
			obj, err = convertWidget(obj, to)
		}
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		out = append(out, runtime.RawExtension{Raw: data})
	}
	return out, nil
}

func readJSON(r *http.Request, into any) error {
	if r.Method != http.MethodPost {
		return fmt.Errorf("widget-operator: %s %s: webhooks take POST", r.Method, r.URL.Path)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		return fmt.Errorf("widget-operator: reading the request body: %w", err)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("widget-operator: the request body is not a review: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, log logr.Logger, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(data); err != nil {
		log.Error(err, "writing the webhook response")
	}
}
