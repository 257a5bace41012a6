package author

import (
	"crypto"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// Signing what `bundle push` and `catalog push` pushed (--sign-key), and `bundle verify`: cosign's
// signature format (rukpak/pkg/signature), so that `cosign verify --key` accepts what these
// commands sign and a Catalog or BundleDeployment with spec.source.image.verify accepts it too.

const signKeyUsage = "after pushing, sign the pushed digest with this PEM private key (ECDSA P-256, unencrypted PKCS#8 or EC; " +
	"cosign's encrypted key files are not supported) and push the signature as cosign does (tag sha256-<digest>.sig)"

// readSignKey reads the --sign-key file; "" gives no key.
func readSignKey(file string) (crypto.Signer, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--sign-key: %w", err)
	}
	key, err := signature.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", file, err)
	}
	return key, nil
}

// registryOptions are the options of the signature's requests: the same credentials as the push
// (the docker config file).
func registryOptions(cmd *cobra.Command) []remote.Option {
	return []remote.Option{remote.WithContext(cmd.Context()), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

func newBundleVerifyCommand(o *options) *cobra.Command {
	var insecure bool
	var keyFiles []string
	cmd := &cobra.Command{
		Use:   "verify IMAGE --key FILE",
		Short: "Verify the cosign signature of a bundle or catalog image with a public key, as rukpak and catalogd do",
		Long: `Resolve IMAGE to its digest and check that it carries a cosign signature (the tag
sha256-<digest>.sig, or an OCI 1.1 referrer) made with one of the public keys given and signing exactly
that digest: the check spec.source.image.verify makes before anything is unpacked. Exits non-zero,
saying Unsigned or SignatureInvalid and why, when it does not.`,
		Example: `  kubectl olmv1 bundle verify quay.io/me/my-operator-bundle:v1.2.0 --key cosign.pub
  kubectl olmv1 bundle verify localhost:5000/my-catalog:latest --key old.pub --key new.pub --insecure`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy := signature.Policy{Name: "--key"}
			for _, f := range keyFiles {
				data, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("--key: %w", err)
				}
				keys, err := signature.ParsePublicKeys(data, f)
				if err != nil {
					return fmt.Errorf("--key: %w", err)
				}
				policy.Keys = append(policy.Keys, keys...)
			}
			var nameOpts []name.Option
			if insecure {
				nameOpts = append(nameOpts, name.Insecure)
			}
			ref, err := name.ParseReference(args[0], nameOpts...)
			if err != nil {
				return fmt.Errorf("image reference %q: %w", args[0], err)
			}
			digest, ok := ref.(name.Digest)
			if !ok {
				desc, err := remote.Head(ref, registryOptions(cmd)...)
				if err != nil {
					return fmt.Errorf("resolving %s: %w", ref, err)
				}
				digest = ref.Context().Digest(desc.Digest.String())
			}
			v, err := signature.Verify(cmd.Context(), digest, policy, registryOptions(cmd)...)
			if err != nil {
				return err
			}
			res := verified{Image: args[0], Ref: digest.String(), KeyFingerprint: v.KeyFingerprint, Signature: v.Signature}
			if o.Output != "table" {
				return o.Print(res, nil)
			}
			fmt.Fprintf(o.Out, "verified %s\n%s is signed by key %s (signature %s)\n", args[0], digest, v.KeyFingerprint, v.Signature)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&keyFiles, "key", nil, "PEM public key file (cosign.pub); repeat it to accept any of several keys")
	_ = cmd.MarkFlagRequired("key")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to talk to the registry")
	return cmd
}

// verified is the result of bundle verify.
type verified struct {
	Image          string `json:"image"`
	Ref            string `json:"ref"`
	KeyFingerprint string `json:"keyFingerprint"`
	Signature      string `json:"signature"`
}
