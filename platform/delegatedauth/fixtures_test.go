package delegatedauth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/platform/pki"
)

// fastBackoff keeps retries in tests quick.
var fastBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}

var notBefore, notAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)

func newCA(t *testing.T, cn string, parent *pki.KeyPair) *pki.KeyPair {
	t.Helper()
	ca, err := pki.Issue(pki.CARequest(cn, notBefore, notAfter), parent)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func newClientCert(t *testing.T, ca *pki.KeyPair, cn string, orgs ...string) *pki.KeyPair {
	t.Helper()
	c, err := pki.Issue(pki.ClientRequest(pkix.Name{CommonName: cn, Organization: orgs}, notBefore, notAfter), ca)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// request is a GET whose TLS peer sent chain (leaf first) and headers (name, value pairs).
func request(chain []*pki.KeyPair, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/apis/x", nil)
	if len(chain) > 0 {
		r.TLS = &tls.ConnectionState{}
		for _, c := range chain {
			r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, c.Cert)
		}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

func certs(kp ...*pki.KeyPair) []*pki.KeyPair { return kp }

// authConfigMap is kube-apiserver's extension-apiserver-authentication ConfigMap for the two CAs
// (nil: key absent), allowing allowedNames as front proxies.
func authConfigMap(clientCA, requestHeaderCA *x509.Certificate, allowedNames string) *corev1.ConfigMap {
	data := map[string]string{
		keyAllowedNames:       allowedNames,
		keyUsernameHeaders:    `["X-Remote-User"]`,
		keyUIDHeaders:         `["X-Remote-Uid"]`,
		keyGroupHeaders:       `["X-Remote-Group"]`,
		keyExtraHeadersPrefix: `["X-Remote-Extra-"]`,
	}
	if clientCA != nil {
		data[keyClientCA] = string(pki.EncodeCert(clientCA))
	}
	if requestHeaderCA != nil {
		data[keyRequestHeaderCA] = string(pki.EncodeCert(requestHeaderCA))
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: AuthConfigMapNamespace, Name: AuthConfigMapName},
		Data:       data,
	}
}

// fakeClock is a clock for the caches that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
