package source

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net/url"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// getSecret reads Secret secretName from opts' namespace; field is the spec field that names it.
func (u *DiskUnpacker) getSecret(ctx context.Context, namespace, secretName, field string) (*corev1.Secret, error) {
	if u.cfg.Client == nil {
		return nil, newError(KindInternal, nil, "cannot read Secret %q named by %s: the unpacker has no Kubernetes client (Config.Client)", secretName, field)
	}
	if namespace == "" {
		return nil, newError(KindInternal, nil, "cannot read Secret %q named by %s: no namespace given (Options.Namespace)", secretName, field)
	}
	s := &corev1.Secret{}
	err := u.cfg.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: secretName}, s)
	switch {
	case err == nil:
		return s, nil
	case apierrors.IsNotFound(err):
		return nil, newError(KindNotFound, err, "Secret %q not found in namespace %q (check %s, or create the Secret)", secretName, namespace, field)
	case apierrors.IsForbidden(err):
		return nil, newError(KindUnauthorized, err, "the controller may not read Secret %q in namespace %q (check its RBAC): %v", secretName, namespace, err)
	}
	return nil, newError(KindUnreachable, err, "reading Secret %q in namespace %q: %v", secretName, namespace, err)
}

// badSecret is an error in a Secret's content: fixing the Secret fixes it, so it is retryable.
func badSecret(format string, args ...any) *Error {
	e := newError(KindInvalidSource, nil, format, args...)
	e.Retryable = true
	return e
}

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret.
type dockerConfig struct {
	Auths map[string]authn.AuthConfig `json:"auths"`
}

// pullSecretKeychain turns a kubernetes.io/dockerconfigjson (or legacy kubernetes.io/dockercfg)
// Secret into a keychain.
func pullSecretKeychain(s *corev1.Secret) (authn.Keychain, error) {
	const field = "spec.source.image.pullSecret"
	var auths map[string]authn.AuthConfig
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		data, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, badSecret("Secret %q (%s) has no %s key", s.Name, field, corev1.DockerConfigJsonKey)
		}
		var cfg dockerConfig
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, badSecret("Secret %q (%s): %s is not a valid docker config: %v", s.Name, field, corev1.DockerConfigJsonKey, err)
		}
		auths = cfg.Auths
	case corev1.SecretTypeDockercfg:
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &auths); err != nil {
			return nil, badSecret("Secret %q (%s): %s is not a valid docker config: %v", s.Name, field, corev1.DockerConfigKey, err)
		}
	default:
		return nil, badSecret("Secret %q has type %q; %s must name a Secret of type %s (e.g. `kubectl create secret docker-registry`)",
			s.Name, s.Type, field, corev1.SecretTypeDockerConfigJson)
	}
	kc := dockerKeychain{}
	for server, cfg := range auths {
		kc[registryHost(server)] = cfg
	}
	return kc, nil
}

// dockerKeychain maps registry hosts to credentials.
type dockerKeychain map[string]authn.AuthConfig

func (k dockerKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := r.RegistryStr()
	candidates := []string{host}
	if host == name.DefaultRegistry || host == "docker.io" || host == "registry-1.docker.io" {
		candidates = append(candidates, name.DefaultRegistry, "docker.io", "registry-1.docker.io")
	}
	for _, c := range candidates {
		if cfg, ok := k[c]; ok {
			return authn.FromConfig(cfg), nil
		}
	}
	return authn.Anonymous, nil
}

// registryHost normalises a docker config key ("https://index.docker.io/v1/", "quay.io",
// "localhost:5000/path") to a host[:port].
func registryHost(server string) string {
	s := server
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			s = u.Host
		}
	}
	if i := strings.Index(s, "/"); i >= 0 {
		s = s[:i]
	}
	return strings.ToLower(s)
}

// caPool reads the "ca.crt" key of a Secret into a certificate pool.
func caPool(s *corev1.Secret, field string) (*x509.CertPool, error) {
	pem, ok := s.Data["ca.crt"]
	if !ok {
		return nil, badSecret("Secret %q (%s) has no ca.crt key; put the PEM-encoded CA certificates there", s.Name, field)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, badSecret("Secret %q (%s): ca.crt holds no PEM-encoded certificate", s.Name, field)
	}
	return pool, nil
}

// writeTempFile writes data to a new file in dir and returns its path.
func writeTempFile(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

func secretValue(s *corev1.Secret, key string) string {
	if v, ok := s.Data[key]; ok {
		return string(v)
	}
	return s.StringData[key]
}
