package author

import (
	"crypto"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlevalidate"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

func newBundleValidateCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "validate DIR",
		Short: "Check a registry+v1 or plain bundle directory with the code rukpak runs",
		Long: `Check a bundle directory before publishing it.

A registry+v1 bundle (manifests/ with a ClusterServiceVersion, and metadata/annotations.yaml) is
checked for: install modes spelled and combined correctly; owned CRDs present in manifests/ with the
named version and kind; deployments running as service accounts that the RBAC creates; webhook
definitions naming existing deployments and owned CRDs; annotations.yaml consistent with itself and
the CSV. Then operator-framework/api's bundle validators run, and the bundle is converted by rukpak's
registry+v1 provisioner for every install mode it supports, exactly as a BundleDeployment would.
A plain bundle (manifests/ only) is converted by rukpak's plain provisioner.

Each problem is one line: file, field, what is wrong and how to fix it. The exit code is 1 when
there is an error (warnings alone exit 0).`,
		Example: `  kubectl olmv1 bundle validate ./bundle
  kubectl olmv1 bundle validate ./bundle -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := bundlevalidate.Validate(args[0])
			if err != nil {
				return err
			}
			if o.Output != "table" {
				if err := o.Print(r, nil); err != nil {
					return err
				}
			} else {
				for _, p := range r.Problems {
					fmt.Fprintln(o.Out, p.String())
				}
				what := fmt.Sprintf("%s bundle", r.Format)
				if r.Name != "" {
					what = fmt.Sprintf("%s bundle %s (package %s, version %s)", r.Format, r.Name, output.OrNone(r.Package), r.Version)
				}
				if r.Valid() {
					fmt.Fprintf(o.Out, "%s: valid (%d warning(s))\n", what, len(r.Problems))
				} else {
					fmt.Fprintf(o.Out, "%s: %d error(s), %d warning(s)\n", what, r.Errors(), len(r.Problems)-r.Errors())
				}
			}
			if !r.Valid() {
				return &command.SilentError{Err: fmt.Errorf("bundle %s is invalid", args[0])}
			}
			return nil
		},
	}
}

func newBundlePushCommand(o *options) *cobra.Command {
	var insecure, skipValidation bool
	var signKey string
	cmd := &cobra.Command{
		Use:   "push DIR IMAGE",
		Short: "Validate a bundle directory, build its image and push it (no container engine needed)",
		Long: `Build the bundle image from a directory and push it to a registry.

The bundle is validated first (as by 'bundle validate'); an invalid bundle is not pushed. A
registry+v1 bundle's annotations become image labels, as operator-sdk and opm set them. Registry
credentials come from the docker config file ($DOCKER_CONFIG/config.json, ~/.docker/config.json),
as 'docker login' or 'podman login --authfile' write it. Prints the pushed digest reference.
With --sign-key the pushed digest is then signed, in cosign's format (see 'bundle verify').`,
		Example: `  kubectl olmv1 bundle push ./bundle quay.io/me/my-operator-bundle:v1.2.0
  kubectl olmv1 bundle push ./bundle localhost:5000/my-operator-bundle:v1.2.0 --insecure
  kubectl olmv1 bundle push ./bundle quay.io/me/my-operator-bundle:v1.2.0 --sign-key signing.key`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, ref := args[0], args[1]
			key, err := readSignKey(signKey)
			if err != nil {
				return err
			}
			format := bundlevalidate.DetectFormat(dir)
			if !skipValidation {
				r, err := bundlevalidate.Validate(dir)
				if err != nil {
					return err
				}
				if !r.Valid() {
					for _, p := range r.Problems {
						if p.Level == bundlevalidate.LevelError {
							fmt.Fprintln(o.ErrOut, p.String())
						}
					}
					return fmt.Errorf("bundle %s has %d error(s); not pushed (run `kubectl olmv1 bundle validate %s`)", dir, r.Errors(), dir)
				}
			}
			var img v1.Image
			if format == bundlevalidate.FormatRegistryV1 {
				img, err = imagebuild.RegistryV1BundleImage(dir)
			} else {
				img, err = imagebuild.PlainBundleImage(dir)
			}
			if err != nil {
				return err
			}
			return o.push(cmd, img, ref, insecure, key, string(format)+" bundle")
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to talk to the registry")
	cmd.Flags().BoolVar(&skipValidation, "skip-validation", false, "push without validating the bundle first")
	cmd.Flags().StringVar(&signKey, "sign-key", "", signKeyUsage)
	return cmd
}

// pushed is the result of a push.
type pushed struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
	Ref    string `json:"ref"`
	// Signature is the signature image pushed with --sign-key.
	Signature string `json:"signature,omitempty"`
}

// push pushes img to ref and, when key is set, signs the pushed digest.
func (o *options) push(cmd *cobra.Command, img v1.Image, ref string, insecure bool, key crypto.Signer, what string) error {
	var opts []imagebuild.PushOption
	if insecure {
		opts = append(opts, imagebuild.WithInsecure())
	}
	d, err := imagebuild.Push(cmd.Context(), img, ref, opts...)
	if err != nil {
		return err
	}
	res := pushed{Image: ref, Digest: d.DigestStr(), Ref: d.String()}
	if key != nil {
		sig, err := signature.Sign(cmd.Context(), d, key, registryOptions(cmd)...)
		if err != nil {
			return fmt.Errorf("pushed %s but did not sign it: %w", d, err)
		}
		res.Signature = sig.String()
	}
	if o.Output != "table" {
		return o.Print(res, nil)
	}
	fmt.Fprintf(o.Out, "pushed %s %s\n%s\n", what, ref, d.String())
	if res.Signature != "" {
		fmt.Fprintf(o.Out, "signed %s (signature %s)\n", d.DigestStr(), res.Signature)
	}
	return nil
}
