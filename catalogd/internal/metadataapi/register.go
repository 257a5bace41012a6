package metadataapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// APIServiceName is the name of the APIService that registers this API with kube-apiserver.
var APIServiceName = metadatav1alpha1.SchemeGroupVersion.Version + "." + metadatav1alpha1.GroupName

// Registration says how kube-apiserver reaches the metadata API.
type Registration struct {
	// Mode is "local" (an ExternalName Service pointing at localhost, for a control plane on this
	// machine), "service" (an existing in-cluster Service), or "none".
	Mode string
	// Namespace and Service name the Service the APIService points at.
	Namespace, Service string
	// Port is the Service port (the local server's port in local mode).
	Port int32
}

// ParseRegistration reads --metadata-apiservice: "none", "local", or "service:<namespace>/<name>[:port]".
func ParseRegistration(flag, namespace string, localPort int32) (Registration, error) {
	switch {
	case flag == "none" || flag == "":
		return Registration{Mode: "none"}, nil
	case flag == "local":
		return Registration{Mode: "local", Namespace: namespace, Service: "catalogd-metadata", Port: localPort}, nil
	case strings.HasPrefix(flag, "service:"):
		ref := strings.TrimPrefix(flag, "service:")
		port := int32(443)
		if i := strings.LastIndex(ref, ":"); i > 0 {
			p, err := strconv.ParseInt(ref[i+1:], 10, 32)
			if err != nil {
				return Registration{}, fmt.Errorf("--metadata-apiservice %q: bad port", flag)
			}
			port, ref = int32(p), ref[:i]
		}
		ns, name, ok := strings.Cut(ref, "/")
		if !ok || ns == "" || name == "" {
			return Registration{}, fmt.Errorf("--metadata-apiservice %q: want service:<namespace>/<name>[:port]", flag)
		}
		return Registration{Mode: "service", Namespace: ns, Service: name, Port: port}, nil
	}
	return Registration{}, fmt.Errorf("--metadata-apiservice %q: want none, local or service:<namespace>/<name>[:port]", flag)
}

// Register creates or updates the APIService (and in local mode the ExternalName Service and its
// namespace) so that kube-apiserver proxies metadata.catalogd.operatorframework.io to this server.
func Register(ctx context.Context, c client.Client, r Registration, caBundle []byte) error {
	if r.Mode == "none" {
		return nil
	}
	if r.Mode == "local" {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", r.Namespace, err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: r.Service, Namespace: r.Namespace},
			Spec: corev1.ServiceSpec{
				Type:         corev1.ServiceTypeExternalName,
				ExternalName: "localhost",
				Ports:        []corev1.ServicePort{{Name: "https", Port: r.Port}},
			},
		}
		if err := upsert(ctx, c, svc, func(existing client.Object) {
			e := existing.(*corev1.Service)
			e.Spec.Type, e.Spec.ExternalName, e.Spec.Ports = svc.Spec.Type, svc.Spec.ExternalName, svc.Spec.Ports
		}); err != nil {
			return fmt.Errorf("registering Service %s/%s: %w", r.Namespace, r.Service, err)
		}
	}
	as := &unstructured.Unstructured{}
	as.SetAPIVersion("apiregistration.k8s.io/v1")
	as.SetKind("APIService")
	as.SetName(APIServiceName)
	spec := map[string]interface{}{
		"group":                metadatav1alpha1.GroupName,
		"version":              metadatav1alpha1.SchemeGroupVersion.Version,
		"groupPriorityMinimum": int64(1000),
		"versionPriority":      int64(15),
		"caBundle":             caBundle,
		"service": map[string]interface{}{
			"namespace": r.Namespace,
			"name":      r.Service,
			"port":      int64(r.Port),
		},
	}
	if err := unstructured.SetNestedField(as.Object, toJSONValue(spec), "spec"); err != nil {
		return err
	}
	return upsert(ctx, c, as, func(existing client.Object) {
		e := existing.(*unstructured.Unstructured)
		e.Object["spec"] = as.Object["spec"]
	})
}

// toJSONValue turns []byte into the base64 string JSON uses, so unstructured objects stay JSON-clean.
func toJSONValue(m map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range m {
		switch t := v.(type) {
		case []byte:
			out[k] = base64.StdEncoding.EncodeToString(t)
		case map[string]interface{}:
			out[k] = toJSONValue(t)
		default:
			out[k] = v
		}
	}
	return out
}

func upsert(ctx context.Context, c client.Client, obj client.Object, mutate func(existing client.Object)) error {
	existing := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, obj)
	}
	if err != nil {
		return err
	}
	mutate(existing)
	return c.Update(ctx, existing)
}
