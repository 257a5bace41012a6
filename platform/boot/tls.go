package boot

import (
	"crypto/tls"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// servingCert is the component's serving certificate (--tls-cert-dir, else generated), built once:
// the metrics endpoint and the component's own TLS servers share it.
func (o *Options) servingCert() (*ServingCert, error) {
	if o.cert != nil {
		return o.cert, nil
	}
	crt, key := CertDirFiles(o.CertDir)
	c, err := NewServingCert(ServingCertOptions{
		What: o.Component, Flag: "--tls-cert-dir", CertFile: crt, KeyFile: key,
		Hosts: append([]string{o.Component}, o.ServingCertHosts...),
	})
	if err != nil {
		return nil, err
	}
	o.cert = c
	return c, nil
}

// metricsOptions are the metrics server options: HTTPS behind TokenReview/SubjectAccessReview, the
// serving certificate and the --tls-profile applied as on every other server, HTTP/1.1 only (no
// HTTP/2 rapid-reset exposure). The metrics endpoint serves the component's certificate; with the
// deprecated --metrics-cert-dir it serves a loader of its own, returned as own (to be started and
// checked by the caller), from the same code.
func (o *Options) metricsOptions() (opts metricsserver.Options, own *ServingCert, err error) {
	profile, err := o.TLS.TLSProfile()
	if err != nil {
		return opts, nil, err
	}
	opts = metricsserver.Options{
		BindAddress:    o.MetricsBindAddress,
		SecureServing:  true,
		FilterProvider: metricsAuth,
	}
	if o.MetricsBindAddress == "0" {
		return opts, nil, nil
	}
	var served *ServingCert
	if o.MetricsCertDir != "" {
		crt, key := CertDirFiles(o.MetricsCertDir)
		if own, err = NewServingCert(ServingCertOptions{What: "metrics", Flag: "--metrics-cert-dir", CertFile: crt, KeyFile: key}); err != nil {
			return opts, nil, err
		}
		served = own
	} else if served, err = o.servingCert(); err != nil {
		return opts, nil, err
	}
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		served.Apply(profile, c)
		c.NextProtos = []string{"http/1.1"}
	}}
	return opts, own, nil
}
