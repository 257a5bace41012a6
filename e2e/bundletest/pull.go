package bundletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	rukpaksource "github.com/olmv1/olmv1/rukpak/pkg/source"
)

// credentialsNamespace is the namespace of the pull secrets dockerCredentials serves; no cluster
// is involved.
const credentialsNamespace = "bundle-test"

// pullToDir pulls the image ref with rukpak's source unpacker (rukpak/pkg/source, the code rukpak
// and catalogd unpack images with: layer digests verified, whiteouts applied, size and file count
// bounded, entries that leave the image root refused) and returns the directory holding its
// filesystem. key names the pull: one directory per key, under the scratch directory; callers must
// not modify it. Credentials are those of the docker configuration (`docker login`), as for crane.
func (t *tester) pullToDir(ctx context.Context, ref, key string) (string, error) {
	if t.unpacker == nil {
		u, err := rukpaksource.New(rukpaksource.Config{CacheDir: filepath.Join(t.work, "images"), Client: dockerCredentials{}})
		if err != nil {
			return "", err
		}
		t.unpacker = u
	}
	var nameOpts []name.Option
	if t.o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nameOpts...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	res, err := t.unpacker.Unpack(ctx, key, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{
		Ref: ref, InsecureSkipTLSVerify: t.o.Insecure,
		// The registry names the "Secret" dockerCredentials makes of the docker configuration.
		PullSecret: r.Context().RegistryStr(),
	}}, rukpaksource.Options{Namespace: credentialsNamespace})
	if err != nil {
		return "", fmt.Errorf("pull %s: %w (check the reference and `docker login`; use --insecure for a plain-HTTP registry)", ref, err)
	}
	return res.Dir, nil
}

// dockerCredentials is the client.Reader the unpacker reads pull secrets from: Secret <registry>
// of credentialsNamespace is a kubernetes.io/dockerconfigjson Secret holding what the docker
// configuration (authn.DefaultKeychain: config.json, credential helpers) has for that registry,
// empty when it has nothing (an anonymous pull).
type dockerCredentials struct{}

func (dockerCredentials) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok || key.Namespace != credentialsNamespace {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	reg, err := name.NewRegistry(key.Name)
	if err != nil {
		return err
	}
	auths := map[string]authn.AuthConfig{}
	a, err := authn.DefaultKeychain.Resolve(reg)
	if err != nil {
		return fmt.Errorf("reading the docker credentials for %s: %w", key.Name, err)
	}
	if a != authn.Anonymous {
		cfg, err := a.Authorization()
		if err != nil {
			return fmt.Errorf("reading the docker credentials for %s: %w", key.Name, err)
		}
		auths[key.Name] = *cfg
	}
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		return err
	}
	*s = corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: data}}
	s.Name, s.Namespace = key.Name, key.Namespace
	return nil
}

func (dockerCredentials) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("bundle test: listing is not supported")
}
