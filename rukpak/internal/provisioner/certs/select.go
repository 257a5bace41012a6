package certs

import (
	"fmt"

	"github.com/olmv1/olmv1/platform/pki"
)

// Provider names, as a rukpak flag would take them.
const (
	SelfSignedName         = "self-signed"
	CertManagerName        = "cert-manager"
	OpenShiftServiceCAName = "openshift-service-ca"
)

// Names lists the providers NewByName knows, for flag help.
var Names = []string{SelfSignedName, CertManagerName, OpenShiftServiceCAName}

// NewByName returns the provider a flag names. ca (and previous, during a rotation) is used by
// self-signed only and is required for it; issuer by cert-manager only and may be nil.
func NewByName(name string, ca *pki.CA, previous []*pki.CA, issuer *IssuerRef) (Provider, error) {
	switch name {
	case SelfSignedName:
		if ca == nil {
			return nil, fmt.Errorf("certificate provider %q needs a CA", name)
		}
		return NewSelfSigned(ca, previous...), nil
	case CertManagerName:
		return NewCertManager(issuer), nil
	case OpenShiftServiceCAName:
		return NewOpenShiftServiceCA(), nil
	default:
		return nil, fmt.Errorf("unknown certificate provider %q: use one of %v", name, Names)
	}
}
