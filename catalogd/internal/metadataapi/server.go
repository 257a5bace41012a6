package metadataapi

import (
	"context"
	"fmt"
	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	extensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/kube-openapi/pkg/common"
)

// ServerOptions configure the aggregated API server.
type ServerOptions struct {
	// BindAddress is host:port to serve HTTPS on, e.g. 127.0.0.1:7444.
	BindAddress string
	// CertDir holds apiserver.crt and apiserver.key; when they are missing a self-signed pair is
	// generated there (its CA is what the APIService's caBundle must hold).
	CertDir string
	// Kubeconfig reaches kube-apiserver for delegated authentication (TokenReview, the requestheader
	// CA in kube-system/extension-apiserver-authentication) and authorization (SubjectAccessReview).
	// Empty means the in-cluster configuration.
	Kubeconfig string
	// ExtraSANs are additional DNS names for a generated serving certificate (e.g. the Service's).
	ExtraSANs []string
}

// Server is a prepared aggregated API server.
type Server struct {
	prepared interface {
		RunWithContext(ctx context.Context) error
	}
	// CABundle is the PEM the APIService must trust.
	CABundle []byte
}

// NewServer builds the metadatav1alpha1.CatalogMetadata API server over hub.
func NewServer(o ServerOptions, hub *Hub) (*Server, error) {
	scheme, codecs, err := apiScheme()
	if err != nil {
		return nil, err
	}
	host, portStr, err := net.SplitHostPort(o.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("--metadata-bind-address %q: %w", o.BindAddress, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--metadata-bind-address %q: %w", o.BindAddress, err)
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return nil, err
	}
	secure := options.NewSecureServingOptions().WithLoopback()
	secure.BindAddress = net.ParseIP(host)
	secure.BindPort = port
	secure.ServerCert.CertDirectory = o.CertDir
	secure.ServerCert.PairName = "apiserver"
	if err := secure.MaybeDefaultWithSelfSignedCerts("localhost", o.ExtraSANs, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating the metadata API serving certificate: %w", err)
	}
	authn := options.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = o.Kubeconfig
	authz := options.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = o.Kubeconfig

	cfg := newConfig(scheme, codecs)
	if err := secure.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, err
	}
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, cfg.OpenAPIConfig); err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	srv, err := newAPIServer(cfg, scheme, codecs, hub)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(o.CertDir, "apiserver.crt"))
	if err != nil {
		return nil, fmt.Errorf("reading the serving certificate for the caBundle: %w", err)
	}
	return &Server{prepared: srv.PrepareRun(), CABundle: ca}, nil
}

// apiScheme is the scheme of the CatalogMetadata API (with its field selectors) and meta/v1.
func apiScheme() (*runtime.Scheme, serializer.CodecFactory, error) {
	scheme := runtime.NewScheme()
	if err := metadatav1alpha1.AddToScheme(scheme); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Group: "", Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return scheme, serializer.NewCodecFactory(scheme), nil
}

// newConfig is the API server configuration without serving, authentication and authorization,
// which NewServer adds (tests serve the same handler without them).
func newConfig(scheme *runtime.Scheme, codecs serializer.CodecFactory) *genericapiserver.Config {
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	cfg.BuildHandlerChainFunc = func(api http.Handler, c *genericapiserver.Config) http.Handler {
		return genericapiserver.DefaultBuildHandlerChain(withIntegerParams(api, codecs), c)
	}
	// OpenAPI: the meta/v1 definitions from apiextensions-apiserver's generated set, plus ours. The API
	// server needs them for field management; kubectl explain and the aggregated /openapi use them too.
	definitions := func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := extensionsopenapi.GetOpenAPIDefinitions(ref)
		for k, v := range metadatav1alpha1.GetOpenAPIDefinitions(ref) {
			defs[k] = v
		}
		return defs
	}
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	cfg.OpenAPIConfig.Info.Title = "catalogd CatalogMetadata"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "catalogd CatalogMetadata"
	return cfg
}

// newAPIServer completes cfg and installs the catalogmetadata resource over hub.
func newAPIServer(cfg *genericapiserver.Config, scheme *runtime.Scheme, codecs serializer.CodecFactory, hub *Hub) (*genericapiserver.GenericAPIServer, error) {
	srv, err := cfg.Complete(nil).New("catalogd-metadata", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(metadatav1alpha1.GroupName, scheme, runtime.NewParameterCodec(scheme), codecs)
	group.VersionedResourcesStorageMap[metadatav1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{"catalogmetadata": NewREST(hub)}
	if err := srv.InstallAPIGroup(&group); err != nil {
		return nil, err
	}
	return srv, nil
}

// Start runs the server until ctx ends; it implements controller-runtime's manager.Runnable.
func (s *Server) Start(ctx context.Context) error {
	return s.prepared.RunWithContext(ctx)
}
