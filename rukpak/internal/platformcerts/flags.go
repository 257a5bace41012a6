package platformcerts

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// Flags are rukpak's --platform-* flags. They are all empty unless the chart runs in tls.mode=selfSigned.
type Flags struct {
	caSecret    string
	serving     servingFlag
	apiServices listFlag
	validity    time.Duration
}

// Bind registers the flags.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.caSecret, "platform-ca-secret", "",
		"<namespace>/<name> of the Secret holding the platform CA (tls.crt, tls.key; ca.crt: the trust bundle). When set, rukpak renews the CA "+
			"and the --platform-serving-secret certificates once a third of their validity is left and injects the trust bundle into --platform-apiservice")
	fs.Var(&f.serving, "platform-serving-secret",
		"<namespace>/<name>:<dnsName>[,<dnsName>...] of a serving-certificate Secret (tls.crt, tls.key, ca.crt) that rukpak keeps signed by the platform CA (repeatable)")
	fs.Var(&f.apiServices, "platform-apiservice", "name of an APIService whose caBundle rukpak keeps equal to the platform trust bundle (repeatable)")
	fs.DurationVar(&f.validity, "platform-cert-validity", DefaultValidity, "validity of the platform CA and serving certificates rukpak issues (a serving certificate never outlives its CA)")
}

// Enabled reports whether --platform-ca-secret was given.
func (f *Flags) Enabled() bool { return f.caSecret != "" }

// Config validates the flags and returns the Rotator's configuration.
func (f *Flags) Config() (Config, error) {
	ca, err := ParseSecretRef(f.caSecret)
	if err != nil {
		return Config{}, fmt.Errorf("--platform-ca-secret: %w", err)
	}
	if f.validity <= 0 {
		return Config{}, fmt.Errorf("--platform-cert-validity must be positive")
	}
	return Config{CASecret: ca, Serving: f.serving, APIServices: f.apiServices, Validity: f.validity}, nil
}

// ParseSecretRef parses <namespace>/<name>.
func ParseSecretRef(s string) (SecretRef, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return SecretRef{}, fmt.Errorf("%q is not <namespace>/<name>", s)
	}
	return SecretRef{Namespace: ns, Name: name}, nil
}

// ParseServingSecret parses <namespace>/<name>:<dnsName>[,<dnsName>...].
func ParseServingSecret(s string) (ServingSecret, error) {
	ref, names, ok := strings.Cut(s, ":")
	if !ok {
		return ServingSecret{}, fmt.Errorf("%q is not <namespace>/<name>:<dnsName>[,<dnsName>...]", s)
	}
	r, err := ParseSecretRef(ref)
	if err != nil {
		return ServingSecret{}, err
	}
	var dns []string
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			dns = append(dns, n)
		}
	}
	if len(dns) == 0 {
		return ServingSecret{}, fmt.Errorf("%q names no DNS name", s)
	}
	return ServingSecret{SecretRef: r, DNSNames: dns}, nil
}

type servingFlag []ServingSecret

func (f *servingFlag) String() string {
	var out []string
	for _, s := range *f {
		out = append(out, s.SecretRef.String()+":"+strings.Join(s.DNSNames, ","))
	}
	return strings.Join(out, " ")
}

func (f *servingFlag) Set(v string) error {
	s, err := ParseServingSecret(v)
	if err != nil {
		return err
	}
	*f = append(*f, s)
	return nil
}

type listFlag []string

func (f *listFlag) String() string { return strings.Join(*f, ",") }

func (f *listFlag) Set(v string) error {
	if v == "" {
		return fmt.Errorf("empty name")
	}
	*f = append(*f, v)
	return nil
}
