package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"testing"
	"time"
)

// TestGeneratePKIFiles checks every file generatePKI writes against what its readers expect:
// kube-apiserver (--tls-*, --client-ca-file, --requestheader-*, --proxy-client-*, --service-account-*),
// kube-controller-manager (--root-ca-file, --service-account-private-key-file) and the kubeconfig.
func TestGeneratePKIFiles(t *testing.T) {
	start := time.Now()
	p, err := generatePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	for name, want := range map[string]struct {
		block string
		mode  os.FileMode
	}{
		caCert: {"CERTIFICATE", 0o644}, caKey: {"EC PRIVATE KEY", 0o600},
		servingCert: {"CERTIFICATE", 0o644}, servingKey: {"EC PRIVATE KEY", 0o600},
		adminCert: {"CERTIFICATE", 0o644}, adminKey: {"EC PRIVATE KEY", 0o600},
		frontProxyCACert: {"CERTIFICATE", 0o644}, frontProxyCAKey: {"EC PRIVATE KEY", 0o600},
		frontProxyCert: {"CERTIFICATE", 0o644}, frontProxyKey: {"EC PRIVATE KEY", 0o600},
		serviceAccountKey: {"RSA PRIVATE KEY", 0o600}, serviceAccountPub: {"PUBLIC KEY", 0o644},
	} {
		fi, err := os.Stat(p.path(name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want.mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want.mode)
		}
		block, rest := pem.Decode(mustRead(t, p.path(name)))
		if block == nil || block.Type != want.block || len(rest) != 0 {
			t.Errorf("%s: want exactly one PEM %s block", name, want.block)
		}
	}

	// The API server is reached as localhost, by its in-cluster names, on 127.0.0.1 and on the first
	// address of the Service CIDR (the kubernetes Service's cluster IP).
	_, serviceNet, err := net.ParseCIDR(ServiceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	serviceIP := slices.Clone(serviceNet.IP.To4())
	serviceIP[3]++
	leafUsage := x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	for _, tc := range []struct {
		cert, key, ca string
		cn            string
		groups        []string
		dnsNames      []string
		ips           []net.IP
		usage         x509.KeyUsage
		extUsage      []x509.ExtKeyUsage
		validity      time.Duration
	}{
		{cert: caCert, key: caKey, ca: caCert, cn: "olmv1-local-cluster-ca", validity: 10 * 365 * 24 * time.Hour,
			usage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment},
		{cert: frontProxyCACert, key: frontProxyCAKey, ca: frontProxyCACert, cn: "olmv1-local-front-proxy-ca", validity: 10 * 365 * 24 * time.Hour,
			usage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment},
		{cert: servingCert, key: servingKey, ca: caCert, cn: "kube-apiserver", validity: 365 * 24 * time.Hour,
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips:      []net.IP{net.ParseIP("127.0.0.1"), serviceIP},
			usage:    leafUsage, extUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{cert: adminCert, key: adminKey, ca: caCert, cn: "olmv1-admin", groups: []string{"system:masters"}, validity: 365 * 24 * time.Hour,
			usage: leafUsage, extUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{cert: frontProxyCert, key: frontProxyKey, ca: frontProxyCACert, cn: frontProxyUserName, validity: 365 * 24 * time.Hour,
			usage: leafUsage, extUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		t.Run(tc.cert, func(t *testing.T) {
			c := parseCert(t, p.path(tc.cert))
			isCA := tc.cert == tc.ca
			if c.IsCA != isCA || (isCA && !c.BasicConstraintsValid) {
				t.Errorf("IsCA %v (basicConstraints valid %v), want %v", c.IsCA, c.BasicConstraintsValid, isCA)
			}
			if c.Subject.CommonName != tc.cn || !slices.Equal(c.Subject.Organization, tc.groups) {
				t.Errorf("subject %v, want CN %q O %v", c.Subject, tc.cn, tc.groups)
			}
			if !slices.Equal(c.DNSNames, tc.dnsNames) || !slices.EqualFunc(c.IPAddresses, tc.ips, net.IP.Equal) {
				t.Errorf("SANs %v %v, want %v %v", c.DNSNames, c.IPAddresses, tc.dnsNames, tc.ips)
			}
			if c.KeyUsage != tc.usage || !slices.Equal(c.ExtKeyUsage, tc.extUsage) {
				t.Errorf("usages %v %v, want %v %v", c.KeyUsage, c.ExtKeyUsage, tc.usage, tc.extUsage)
			}
			if c.SerialNumber.Sign() <= 0 {
				t.Errorf("serial %v is not positive", c.SerialNumber)
			}
			// Valid from an hour before generatePKI ran (clock skew between processes), for validity.
			if nb := start.Add(-time.Hour); c.NotBefore.Before(nb.Add(-time.Minute)) || c.NotBefore.After(nb.Add(time.Minute)) {
				t.Errorf("NotBefore %v, want about %v", c.NotBefore, nb)
			}
			if na := start.Add(tc.validity); c.NotAfter.Before(na.Add(-time.Minute)) || c.NotAfter.After(na.Add(time.Minute)) {
				t.Errorf("NotAfter %v, want about %v", c.NotAfter, na)
			}
			pair, err := tls.LoadX509KeyPair(p.path(tc.cert), p.path(tc.key))
			if err != nil {
				t.Fatalf("key pair does not load: %v", err)
			}
			if k, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
				t.Errorf("key %T, want P-256 ECDSA", pair.PrivateKey)
			}
			roots := x509.NewCertPool()
			roots.AddCert(parseCert(t, p.path(tc.ca)))
			opts := x509.VerifyOptions{Roots: roots, KeyUsages: tc.extUsage}
			if isCA {
				opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageAny}
			}
			if _, err := c.Verify(opts); err != nil {
				t.Errorf("does not verify against %s: %v", tc.ca, err)
			}
			hosts := slices.Clone(tc.dnsNames)
			for _, ip := range tc.ips {
				hosts = append(hosts, ip.String())
			}
			for _, host := range hosts {
				if err := c.VerifyHostname(host); err != nil {
					t.Errorf("not valid for %s: %v", host, err)
				}
			}
		})
	}

	// The service-account key pair: an RSA key (PKCS#1) and its public half (PKIX) verify each other.
	block, _ := pem.Decode(mustRead(t, p.path(serviceAccountKey)))
	priv, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if priv.N.BitLen() != 2048 {
		t.Errorf("service-account key is %d bits, want 2048", priv.N.BitLen())
	}
	block, _ = pem.Decode(mustRead(t, p.path(serviceAccountPub)))
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("token"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	if rsaPub, ok := pub.(*rsa.PublicKey); !ok || rsa.VerifyPKCS1v15(rsaPub, crypto.SHA256, digest[:], sig) != nil {
		t.Errorf("sa.pub (%T) does not verify what sa.key signs", pub)
	}
}
