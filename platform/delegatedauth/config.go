package delegatedauth

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/platform/pki"
)

// The ConfigMap kube-apiserver publishes for extension API servers, and its keys.
const (
	AuthConfigMapNamespace = "kube-system"
	AuthConfigMapName      = "extension-apiserver-authentication"

	keyClientCA            = "client-ca-file"
	keyRequestHeaderCA     = "requestheader-client-ca-file"
	keyAllowedNames        = "requestheader-allowed-names"
	keyUsernameHeaders     = "requestheader-username-headers"
	keyUIDHeaders          = "requestheader-uid-headers"
	keyGroupHeaders        = "requestheader-group-headers"
	keyExtraHeadersPrefix  = "requestheader-extra-headers-prefix"
	configReloadInterval   = 30 * time.Second
	configMapSourceMessage = AuthConfigMapNamespace + "/" + AuthConfigMapName
)

// certConfig is what the ConfigMap says about certificates. The zero value accepts none.
type certConfig struct {
	// clientCA verifies client certificates; nil accepts none.
	clientCA *x509.CertPool
	// frontProxy is nil when front-proxy authentication is not configured.
	frontProxy *frontProxyConfig
}

// frontProxyConfig is the requestheader part of the ConfigMap.
type frontProxyConfig struct {
	ca              *x509.CertPool
	allowedNames    []string
	usernameHeaders []string
	uidHeaders      []string
	groupHeaders    []string
	extraPrefixes   []string
}

// parseCertConfig reads the ConfigMap's data. Front-proxy authentication is configured when the
// requestheader CA and at least one user name header are there. Errors name the key at fault.
func parseCertConfig(data map[string]string) (*certConfig, error) {
	cfg := &certConfig{}
	var err error
	if cfg.clientCA, err = parsePool(data, keyClientCA); err != nil {
		return nil, err
	}
	fpCA, err := parsePool(data, keyRequestHeaderCA)
	if err != nil || fpCA == nil {
		return cfg, err
	}
	fp := &frontProxyConfig{ca: fpCA}
	for key, dst := range map[string]*[]string{
		keyAllowedNames:       &fp.allowedNames,
		keyUsernameHeaders:    &fp.usernameHeaders,
		keyUIDHeaders:         &fp.uidHeaders,
		keyGroupHeaders:       &fp.groupHeaders,
		keyExtraHeadersPrefix: &fp.extraPrefixes,
	} {
		if *dst, err = parseList(data, key); err != nil {
			return nil, err
		}
	}
	if len(fp.usernameHeaders) > 0 {
		cfg.frontProxy = fp
	}
	return cfg, nil
}

// parsePool reads a PEM bundle; an absent or empty key is nil, a key without any certificate an error.
func parsePool(data map[string]string, key string) (*x509.CertPool, error) {
	s := strings.TrimSpace(data[key])
	if s == "" {
		return nil, nil
	}
	certs := pki.ParseCerts([]byte(s))
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s %s: no PEM certificate", configMapSourceMessage, key)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// parseList reads a JSON array of strings; an absent or empty key is nil.
func parseList(data map[string]string, key string) ([]string, error) {
	s := strings.TrimSpace(data[key])
	if s == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("%s %s: want a JSON array of strings: %w", configMapSourceMessage, key, err)
	}
	return out, nil
}

// Load reads the ConfigMap kube-system/extension-apiserver-authentication once and makes its CAs and
// requestheader settings current. A missing ConfigMap accepts no certificates (and is not an error);
// on any other error the previous settings stay. Without ConfigMaps in the options Load does nothing.
func (a *Authenticator) Load(ctx context.Context) error {
	if a.configMaps == nil {
		return nil
	}
	cm, err := a.configMaps.ConfigMaps(AuthConfigMapNamespace).Get(ctx, AuthConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		logr.FromContextOrDiscard(ctx).Info("ConfigMap not found: client certificates and front-proxy headers are not accepted",
			"configMap", configMapSourceMessage)
		a.certs.Store(&certConfig{})
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s (the service account needs get on it, e.g. the Role "+
			"extension-apiserver-authentication-reader): %w", configMapSourceMessage, err)
	}
	cfg, err := parseCertConfig(cm.Data)
	if err != nil {
		return err
	}
	a.certs.Store(cfg)
	return nil
}

// Start loads the ConfigMap (see Load) and returns; until ctx is done it reloads it every 30 seconds
// in the background, logging failures (with the logr logger of ctx) and keeping the last good
// settings. It returns the first load's error, in which case nothing runs in the background.
func (a *Authenticator) Start(ctx context.Context) error {
	if err := a.Load(ctx); err != nil {
		return err
	}
	if a.configMaps == nil {
		return nil
	}
	go func() {
		tick := time.NewTicker(configReloadInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := a.Load(ctx); err != nil {
					logr.FromContextOrDiscard(ctx).Error(err, "reloading the authentication ConfigMap; keeping the previous settings")
				}
			}
		}
	}()
	return nil
}
