package metadataapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/olmv1/olmv1/platform/pki"
)

// servingCertValidity is how long a generated serving certificate (and its CA) is valid. catalogd
// generates one only when --metadata-cert-dir holds none; a deployment mounts its own (the Helm
// chart's Secret), which is re-read when it changes.
const servingCertValidity = 365 * 24 * time.Hour

// ensureServingCert keeps crt and key when both exist; otherwise it writes a new pair: a CA and a
// serving certificate it signs for localhost, 127.0.0.1 and sans. crt holds the certificate followed
// by the CA, so that the file is both the chain served and the APIService's caBundle.
func ensureServingCert(crt, key string, sans []string) error {
	_, errCrt := os.Stat(crt)
	_, errKey := os.Stat(key)
	if errCrt == nil && errKey == nil {
		return nil
	}
	for _, err := range []error{errCrt, errKey} {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	now := time.Now().Add(-time.Minute)
	ca, err := pki.Issue(pki.CARequest(fmt.Sprintf("catalogd-metadata-ca@%d", now.Unix()), now, now.Add(servingCertValidity)), nil)
	if err != nil {
		return err
	}
	req := pki.ServingRequest(append([]string{"localhost"}, sans...), now, now.Add(servingCertValidity))
	req.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	leaf, err := pki.Issue(req, ca)
	if err != nil {
		return err
	}
	keyPEM, err := pki.EncodePKCS8Key(leaf.Key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(crt), 0o700); err != nil {
		return err
	}
	// The key first: a crash between the two writes leaves no certificate, so the next start
	// generates a new pair instead of pairing a certificate with a key that is not its own.
	if err := writeFileAtomic(key, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(crt, append(pki.EncodeCert(leaf.Cert), pki.EncodeCert(ca.Cert)...), 0o644)
}

// writeFileAtomic writes data to path through a temporary file and a rename.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
