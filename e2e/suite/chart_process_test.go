package suite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/platform/boot/boottest"
	"github.com/olmv1/olmv1/platform/pki"
)

// The chart's pods never run on kwok fake nodes; the chart spec runs the binaries as local processes
// configured exactly as the chart's Deployments configure them.

// chartProcess is one component run as a local process the way its Deployment configures it.
type chartProcess struct {
	name, dir, log string
	cmd            *exec.Cmd
	done           chan struct{}
	// addrs maps each address flag to the 127.0.0.1 address it got.
	addrs map[string]string
	// secretVolumes are the Secret volumes, materialized in kubelet's layout.
	secretVolumes []chartSecretVolume
}

type chartSecretVolume struct {
	dir, secret string
	items       []corev1.KeyToPath
}

var chartAddressFlags = []string{"--metrics-bind-address", "--health-probe-bind-address", "--http-bind-address", "--metadata-bind-address"}

// startChartComponent runs bin/<name> with the args of the chart's Deployment: every listen address
// moved to a free 127.0.0.1 port, every volume mount path to a local directory (Secret volumes written
// as kubelet does, emptyDirs empty), and a kubeconfig with a token of the chart's ServiceAccount.
func startChartComponent(ctx context.Context, name string) *chartProcess {
	d, err := env.clientset.AppsV1().Deployments(chartNamespace).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	dir, err := os.MkdirTemp("", "olmv1-chart-"+name+"-")
	Expect(err).NotTo(HaveOccurred())
	p := &chartProcess{name: name, dir: dir, log: filepath.Join(dir, name+".log"), addrs: map[string]string{}, done: make(chan struct{})}

	volumeDirs := map[string]string{}
	for _, v := range pod.Volumes {
		vd := filepath.Join(dir, "volumes", v.Name)
		Expect(os.MkdirAll(vd, 0o755)).To(Succeed())
		volumeDirs[v.Name] = vd
		if v.Secret != nil {
			p.secretVolumes = append(p.secretVolumes, chartSecretVolume{dir: vd, secret: v.Secret.SecretName, items: v.Secret.Items})
		}
	}
	p.refreshSecretVolumes(ctx)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = volumeDirs[m.Name]
	}
	var args []string
	for _, a := range c.Args {
		flag, val, _ := strings.Cut(a, "=")
		if slices.Contains(chartAddressFlags, flag) && val != "0" {
			port, err := localcluster.FreePort()
			Expect(err).NotTo(HaveOccurred())
			val = fmt.Sprintf("127.0.0.1:%d", port)
			p.addrs[flag] = val
		}
		// The longest mount path that contains the value, rewritten once.
		best := ""
		for mountPath := range mounts {
			if (val == mountPath || strings.HasPrefix(val, mountPath+"/")) && len(mountPath) > len(best) {
				best = mountPath
			}
		}
		if best != "" {
			val = mounts[best] + strings.TrimPrefix(val, best)
		}
		args = append(args, flag+"="+val)
	}
	Expect(p.addrs).To(HaveKey("--health-probe-bind-address"))
	args = append(args, "--kubeconfig="+writeServiceAccountKubeconfig(ctx, name, dir))

	logf, err := os.Create(p.log)
	Expect(err).NotTo(HaveOccurred())
	p.cmd = exec.Command(filepath.Join(chartBinDir(), name), args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	Expect(p.cmd.Start()).To(Succeed())
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	fmt.Fprintf(GinkgoWriter, "%s: pid %d, args %v, log %s\n", name, p.cmd.Process.Pid, args, p.log)
	return p
}

// refreshSecretVolumes writes each Secret volume as kubelet does: the files in a new timestamped
// directory, ..data switched to it atomically, the item paths symlinked through ..data, and the
// previous directory removed.
func (p *chartProcess) refreshSecretVolumes(ctx context.Context) {
	for _, v := range p.secretVolumes {
		data := secretData(ctx, v.secret)
		items := v.items
		if len(items) == 0 {
			for k := range data {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		files := map[string][]byte{}
		for _, it := range items {
			files[it.Path] = data[it.Key]
		}
		Expect(boottest.WriteSecretVolume(v.dir, files)).To(Succeed())
	}
}

func writeServiceAccountKubeconfig(ctx context.Context, sa, dir string) string {
	cluster := clientcmdapi.NewCluster()
	cluster.Server = env.cfg.Host
	cluster.CertificateAuthority = env.cfg.CAFile
	cluster.CertificateAuthorityData = env.cfg.CAData
	auth := clientcmdapi.NewAuthInfo()
	auth.Token = serviceAccountToken(ctx, sa)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = cluster
	kc.AuthInfos[sa] = auth
	kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: sa}
	kc.CurrentContext = sa
	path := filepath.Join(dir, "kubeconfig")
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

func (p *chartProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *chartProcess) ready() error {
	if p.exited() {
		return StopTrying(fmt.Sprintf("%s exited; see %s", p.name, p.log))
	}
	resp, err := http.Get("http://" + p.addrs["--health-probe-bind-address"] + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

func (p *chartProcess) tlsConfig(caPEM []byte) *tls.Config {
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(caPEM)).To(BeTrue())
	return &tls.Config{RootCAs: pool, ServerName: p.name + "." + chartNamespace + ".svc", MinVersion: tls.VersionTLS12}
}

// get requests https://addr/path, verifying the server as the component's Service name under caPEM.
func (p *chartProcess) get(caPEM []byte, addr, path, token string) (int, string) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.tlsConfig(caPEM)}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

func (p *chartProcess) servedCertErr(caPEM []byte, addr string) (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", addr, p.tlsConfig(caPEM))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func (p *chartProcess) servedCert(caPEM []byte, addr string) *x509.Certificate {
	c, err := p.servedCertErr(caPEM, addr)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// forbidden returns the log lines in which the API server denied the component something.
func (p *chartProcess) forbidden() []string {
	b, err := os.ReadFile(p.log)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "forbidden") {
			out = append(out, l)
		}
	}
	return out
}

func (p *chartProcess) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	fmt.Fprintf(GinkgoWriter, "%s stopped; log kept in %s\n", p.name, p.log)
}

// expectRukpakRenewsServingCertificate replaces p's serving Secret (<name>-tls) with a certificate of
// the chart's CA that has less than a third of its validity left, and expects rukpak (running with the
// chart's --platform-* flags and RBAC) to replace it with a fresh one of the same CA, which p then
// serves once the mounted files are refreshed as kubelet does.
func expectRukpakRenewsServingCertificate(ctx context.Context, p *chartProcess) {
	secretName := p.name + "-tls"
	caData := secretData(ctx, "olmv1-ca")
	ca, err := pki.ParseCA(caData[corev1.TLSCertKey], caData[corev1.TLSPrivateKeyKey])
	Expect(err).NotTo(HaveOccurred())
	caCert := ca.Cert
	dnsName := p.name + "." + chartNamespace + ".svc"
	now := time.Now()
	due, err := pki.Issue(pki.Request{
		Subject:     pkix.Name{CommonName: p.name},
		DNSNames:    []string{p.name, p.name + "." + chartNamespace, dnsName, dnsName + ".cluster.local"},
		NotBefore:   now.Add(-10 * time.Minute),
		NotAfter:    now.Add(5 * time.Minute), // a third of 15 minutes left: due for renewal
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, &ca.KeyPair)
	Expect(err).NotTo(HaveOccurred())
	Expect(pki.NeedsRenewal(due.Cert, now)).To(BeTrue())
	dueKey, err := pki.EncodePKCS8Key(due.Key)
	Expect(err).NotTo(HaveOccurred())
	short := pki.EncodeCert(due.Cert)
	s, err := env.clientset.CoreV1().Secrets(chartNamespace).Get(ctx, secretName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = short, dueKey
	_, err = env.clientset.CoreV1().Secrets(chartNamespace).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())

	var renewed *x509.Certificate
	Eventually(func(g Gomega) {
		s, err := env.clientset.CoreV1().Secrets(chartNamespace).Get(ctx, secretName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Data[corev1.TLSCertKey]).NotTo(Equal(short), "rukpak has not renewed %s yet", secretName)
		pair, err := pki.ParseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		g.Expect(err).NotTo(HaveOccurred())
		renewed = pair.Cert
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	Expect(renewed.NotAfter).To(BeTemporally(">", now.Add(300*24*time.Hour)), "renewed for the chart's validity (365 days)")
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(secretData(ctx, secretName)["ca.crt"])).To(BeTrue())
	_, err = renewed.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsName})
	Expect(err).NotTo(HaveOccurred(), "the renewed certificate against the Secret's ca.crt")
	Expect(renewed.CheckSignatureFrom(caCert)).To(Succeed(), "signed by the same CA")

	By("rukpak records an Event on " + secretName)
	Eventually(func(g Gomega) {
		evs, err := env.clientset.CoreV1().Events(chartNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + secretName})
		g.Expect(err).NotTo(HaveOccurred())
		var reasons []string
		for _, e := range evs.Items {
			reasons = append(reasons, e.Reason)
		}
		g.Expect(reasons).To(ContainElement("ServingCertificateRenewed"))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

	By(p.name + " serves the renewed certificate without a restart")
	p.refreshSecretVolumes(ctx)
	Eventually(func(g Gomega) {
		c, err := p.servedCertErr(secretData(ctx, secretName)["ca.crt"], p.addrs["--metrics-bind-address"])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.SerialNumber).To(Equal(renewed.SerialNumber))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	Expect(p.exited()).To(BeFalse())
}
