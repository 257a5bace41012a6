// Package boottest helps tests of the components' TLS serving: it writes certificates the way
// kubelet updates a mounted Secret volume, so that tests exercise the same atomic rotation that
// certificate reloading sees in a cluster.
package boottest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/olmv1/olmv1/platform/pki"
)

// WriteSecretVolume writes files (path → content) into dir as kubelet updates a Secret volume: the
// files in a new timestamped directory, ..data switched to it with one atomic rename, each path a
// symlink through ..data, and the previous timestamped directory removed.
func WriteSecretVolume(dir string, files map[string][]byte) error {
	ts, err := os.MkdirTemp(dir, "..ts-")
	if err != nil {
		return err
	}
	for p, data := range files {
		if err := os.WriteFile(filepath.Join(ts, p), data, 0o600); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for p := range files {
		if _, err := os.Lstat(filepath.Join(dir, p)); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", p), filepath.Join(dir, p)); err != nil {
				return err
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// SelfSignedServing returns a PEM certificate and EC key for cn, valid for an hour on 127.0.0.1.
func SelfSignedServing(cn string) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	pair, err := pki.Issue(pki.Request{
		Subject:     pkix.Name{CommonName: cn},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = pki.EncodeECKey(pair.Key); err != nil {
		return nil, nil, err
	}
	return pki.EncodeCert(pair.Cert), keyPEM, nil
}

// RotateServingCert writes a new self-signed tls.crt/tls.key for cn into the Secret volume dir.
func RotateServingCert(dir, cn string) error {
	crt, key, err := SelfSignedServing(cn)
	if err != nil {
		return err
	}
	return WriteSecretVolume(dir, map[string][]byte{"tls.crt": crt, "tls.key": key})
}

// ServedCN returns the common name of the certificate the TLS server at addr presents.
func ServedCN(addr string) (string, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the served certificate
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}
