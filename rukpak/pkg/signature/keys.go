package signature

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// PublicKey is one trusted public key of a policy.
type PublicKey struct {
	// Key is an *ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey.
	Key crypto.PublicKey
	// Fingerprint is "sha256:" and the hex SHA-256 of the key's DER (PKIX) encoding.
	Fingerprint string
	// Origin says where the key was read from, for messages (e.g. `Secret "keys" key "cosign.pub"`).
	Origin string
}

// Fingerprint returns "sha256:<hex>" of the DER (PKIX) encoding of key.
func Fingerprint(key crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// ParsePublicKeys reads every PEM "PUBLIC KEY" block of data (a cosign.pub file holds one; a
// Secret value may hold several). It fails when data holds none, or a block that is not a
// supported key: ECDSA on P-256, P-384 or P-521, RSA of at least 2048 bits, or Ed25519.
func ParsePublicKeys(data []byte, origin string) ([]PublicKey, error) {
	var keys []PublicKey
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%s: PEM block %q is not a public key (want \"PUBLIC KEY\", as in cosign.pub)", origin, block.Type)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", origin, err)
		}
		if err := supported(k); err != nil {
			return nil, fmt.Errorf("%s: %w", origin, err)
		}
		fp, err := Fingerprint(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", origin, err)
		}
		keys = append(keys, PublicKey{Key: k, Fingerprint: fp, Origin: origin})
	}
	if len(keys) == 0 {
		if strings.TrimSpace(string(rest)) != "" || len(data) > 0 {
			return nil, fmt.Errorf("%s holds no PEM-encoded public key (\"-----BEGIN PUBLIC KEY-----\")", origin)
		}
		return nil, fmt.Errorf("%s is empty", origin)
	}
	return keys, nil
}

func supported(k crypto.PublicKey) error {
	switch k := k.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("ECDSA curve %s is not supported (use P-256)", k.Curve.Params().Name)
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits is too short (at least 2048)", k.N.BitLen())
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("key type %T is not supported (use ECDSA P-256, RSA or Ed25519)", k)
}

// ParsePrivateKey reads an unencrypted PEM private key for signing: "PRIVATE KEY" (PKCS#8, as
// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` writes) or "EC PRIVATE KEY"
// (SEC 1, as `openssl ecparam -genkey -name prime256v1` writes). cosign's own encrypted key files
// ("ENCRYPTED SIGSTORE PRIVATE KEY", from `cosign generate-key-pair`) are not supported: export the
// key unencrypted, or sign with cosign itself.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found (expected \"-----BEGIN PRIVATE KEY-----\" or \"-----BEGIN EC PRIVATE KEY-----\")")
	}
	var (
		k   any
		err error
	)
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("PEM block %q is an encrypted key, which is not supported: use an unencrypted PKCS#8 or EC private key", block.Type)
	default:
		return nil, fmt.Errorf("PEM block %q is not a supported private key (want \"PRIVATE KEY\" or \"EC PRIVATE KEY\")", block.Type)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key type %T cannot sign", k)
	}
	if err := supported(signer.Public()); err != nil {
		return nil, err
	}
	return signer, nil
}
