package source

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
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

// gitAuth builds credentials from spec.source.git.authSecret: username/password (or a token as
// password) for http(s), ssh-privatekey and known_hosts for ssh.
func (u *DiskUnpacker) gitAuth(ctx context.Context, spec rukpakv1alpha1.GitSource, ep *transport.Endpoint, opts Options, tmp string) (transport.AuthMethod, error) {
	if spec.AuthSecret == "" {
		return nil, nil
	}
	const field = "spec.source.git.authSecret"
	s, err := u.getSecret(ctx, opts.Namespace, spec.AuthSecret, field)
	if err != nil {
		return nil, err
	}
	switch ep.Protocol {
	case "http", "https":
		password := secretValue(s, "password")
		if password == "" {
			return nil, badSecret("Secret %q (%s) has no password key; for http(s) repositories set username and password (or a token as password)", s.Name, field)
		}
		username := secretValue(s, "username")
		if username == "" {
			username = "git"
		}
		return &githttp.BasicAuth{Username: username, Password: password}, nil
	case "ssh":
		key := s.Data["ssh-privatekey"]
		if len(key) == 0 {
			return nil, badSecret("Secret %q (%s) has no ssh-privatekey key; ssh repositories need a private key", s.Name, field)
		}
		knownHosts := s.Data["known_hosts"]
		if len(knownHosts) == 0 {
			return nil, badSecret("Secret %q (%s) has no known_hosts key: the server's host key must be known to trust it (add the output of `ssh-keyscan %s`)", s.Name, field, ep.Host)
		}
		user := ep.User
		if user == "" {
			user = "git"
		}
		auth, err := gitssh.NewPublicKeys(user, key, "")
		if err != nil {
			return nil, badSecret("Secret %q (%s): ssh-privatekey is not a usable private key: %v", s.Name, field, err)
		}
		f, err := writeTempFile(tmp, "known_hosts-", knownHosts)
		if err != nil {
			return nil, newError(KindInternal, err, "writing known_hosts: %v", err)
		}
		defer os.Remove(f)
		if auth.HostKeyCallback, err = gitssh.NewKnownHostsCallback(f); err != nil {
			return nil, badSecret("Secret %q (%s): known_hosts is not valid: %v", s.Name, field, err)
		}
		return auth, nil
	}
	return nil, newError(KindInvalidSource, nil, "%s: credentials are not supported for %s:// repositories (remove %s)", spec.Repository, ep.Protocol, field)
}
