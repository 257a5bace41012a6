package metadataapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/olmv1/olmv1/platform/boot"
)

// certDirPairs are the file names a deprecated --metadata-cert-dir may hold: a kubernetes.io/tls
// Secret's, then the aggregated API server convention the chart used to mount.
var certDirPairs = [][2]string{{"tls.crt", "tls.key"}, {"apiserver.crt", "apiserver.key"}}

// certFromDir is the loader for a deprecated --metadata-cert-dir: its tls.crt/tls.key (or
// apiserver.crt/apiserver.key), watched; when it holds neither pair, the same generated fallback as
// every other server (nothing is written to the directory any more).
func certFromDir(dir string, sans []string) (*boot.ServingCert, error) {
	crt, key, err := findCertFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("--metadata-cert-dir: %w", err)
	}
	return boot.NewServingCert(boot.ServingCertOptions{
		What: "CatalogMetadata API", Flag: "--metadata-cert-dir", CertFile: crt, KeyFile: key, Hosts: sans,
	})
}

// findCertFiles returns the first pair of certDirPairs whose two files exist in dir, or empty names
// when dir (or the directory itself) holds none. Half a pair is an error.
func findCertFiles(dir string) (crt, key string, err error) {
	if dir == "" {
		return "", "", nil
	}
	for _, p := range certDirPairs {
		crt, key := filepath.Join(dir, p[0]), filepath.Join(dir, p[1])
		_, errCrt := os.Stat(crt)
		_, errKey := os.Stat(key)
		switch {
		case errCrt == nil && errKey == nil:
			return crt, key, nil
		case errCrt == nil || errKey == nil:
			return "", "", fmt.Errorf("%s holds only one of %s and %s: mount both, or neither for a generated certificate", dir, p[0], p[1])
		case !errors.Is(errCrt, os.ErrNotExist) || !errors.Is(errKey, os.ErrNotExist):
			return "", "", errors.Join(errCrt, errKey)
		}
	}
	return "", "", nil
}
