package source

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// keylessPolicy reads the trusted root of a keyless policy (spec.source.image.verify.cosign.keyless)
// from its ConfigMap or Secret in namespace. A missing object or a bad trusted root is retried with
// backoff (creating or fixing it helps); a subjectRegExp that does not compile is terminal.
func (u *DiskUnpacker) keylessPolicy(ctx context.Context, ref, namespace string, k rukpakv1alpha1.KeylessVerification) (*signature.Policy, error) {
	const field = verifyField + ".cosign.keyless"
	p := &signature.KeylessPolicy{Issuer: k.Issuer, Subject: k.Subject}
	if k.Subject == "" {
		re, err := signature.CompileSubjectRegExp(k.SubjectRegExp)
		if err != nil {
			return nil, newError(KindInvalidSource, err, "image %q: %s.subjectRegExp %q is not a valid regular expression: %v", ref, field, k.SubjectRegExp, err)
		}
		p.SubjectRegExp = re
	}
	key := k.TrustedRootRef.Key
	if key == "" {
		key = rukpakv1alpha1.DefaultTrustedRootKey
	}
	kind := k.TrustedRootRef.Kind
	if kind == "" {
		kind = rukpakv1alpha1.TrustedRootKindConfigMap
	}
	refField := field + ".trustedRootRef"
	var (
		data  []byte
		found bool
	)
	switch kind {
	case rukpakv1alpha1.TrustedRootKindSecret:
		s, err := u.getSecret(ctx, namespace, k.TrustedRootRef.Name, refField)
		if err != nil {
			return nil, err
		}
		data, found = s.Data[key]
	default:
		cm, err := u.getConfigMap(ctx, namespace, k.TrustedRootRef.Name, refField)
		if err != nil {
			return nil, err
		}
		var str string
		if str, found = cm.Data[key]; found {
			data = []byte(str)
		} else {
			data, found = cm.BinaryData[key]
		}
	}
	origin := fmt.Sprintf("%s %q key %q", kind, k.TrustedRootRef.Name, key)
	if !found {
		return nil, badSecret("%s not found: the %s holds no key %q (%s; put a sigstore trusted_root.json there, or set trustedRootRef.key)", origin, kind, key, refField)
	}
	root, err := signature.ParseTrustedRoot(data, origin)
	if err != nil {
		return nil, badSecret("%v (%s)", err, refField)
	}
	p.Root = root
	return &signature.Policy{Name: fmt.Sprintf("%s (%s)", origin, refField), Keyless: p}, nil
}

// getConfigMap reads ConfigMap name in namespace, named by field, classifying the errors as
// getSecret does.
func (u *DiskUnpacker) getConfigMap(ctx context.Context, namespace, cmName, field string) (*corev1.ConfigMap, error) {
	if u.cfg.Client == nil {
		return nil, newError(KindInternal, nil, "cannot read ConfigMap %q named by %s: the unpacker has no Kubernetes client (Config.Client)", cmName, field)
	}
	if namespace == "" {
		return nil, newError(KindInternal, nil, "cannot read ConfigMap %q named by %s: no namespace given (Options.Namespace)", cmName, field)
	}
	cm := &corev1.ConfigMap{}
	err := u.cfg.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: cmName}, cm)
	switch {
	case err == nil:
		return cm, nil
	case apierrors.IsNotFound(err):
		return nil, newError(KindNotFound, err, "ConfigMap %q not found in namespace %q (check %s, or create the ConfigMap)", cmName, namespace, field)
	case apierrors.IsForbidden(err):
		return nil, newError(KindUnauthorized, err, "the controller may not read ConfigMap %q in namespace %q (check its RBAC): %v", cmName, namespace, err)
	}
	return nil, newError(KindUnreachable, err, "reading ConfigMap %q in namespace %q: %v", cmName, namespace, err)
}
