package localcluster

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The cluster DNS of a real-node cluster: CoreDNS (built from the Go module proxy with the plugins of
// coreDNSPlugins), imported into the node's containerd and run as a Deployment behind the kube-dns
// Service, which kubelet hands to every pod as its nameserver. It answers for cluster.local only: the
// cluster's namespace has no way out, so there is no upstream to forward other names to (they are
// refused at once).
const (
	// ClusterDNSIP is the kube-dns Service's address, inside the cluster's network namespace.
	ClusterDNSIP  = "10.96.0.10"
	coreDNSImage  = "olmv1.local/coredns:" + CoreDNSVersion
	coreDNSPort   = 1053 // unprivileged: the container runs as non-root
	coreDNSLabel  = "kube-dns"
	dnsNamespace  = "kube-system"
	clusterDomain = "cluster.local"
)

const corefile = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`

// deployClusterDNS creates CoreDNS's RBAC, Corefile, Deployment and the kube-dns Service, and waits
// until its pod is Ready.
func deployClusterDNS(ctx context.Context, cs kubernetes.Interface) error {
	labels := map[string]string{"k8s-app": coreDNSLabel}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: dnsNamespace, Labels: labels}
	}
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the cluster DNS %s: %w", what, err)
		}
		return nil
	}
	if _, err := cs.CoreV1().ServiceAccounts(dnsNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("coredns")}, metav1.CreateOptions{}); create("ServiceAccount", err) != nil {
		return create("ServiceAccount", err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "olmv1:coredns", Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); create("ClusterRole", err) != nil {
		return create("ClusterRole", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "olmv1:coredns", Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "coredns", Namespace: dnsNamespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); create("ClusterRoleBinding", err) != nil {
		return create("ClusterRoleBinding", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta("coredns"), Data: map[string]string{"Corefile": corefile}}
	if _, err := cs.CoreV1().ConfigMaps(dnsNamespace).Create(ctx, cm, metav1.CreateOptions{}); create("ConfigMap", err) != nil {
		return create("ConfigMap", err)
	}
	probe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}}, PeriodSeconds: 2}
	}
	dep := &appsv1.Deployment{
		ObjectMeta: meta("coredns"),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "coredns",
					DNSPolicy:          corev1.DNSDefault, // not itself
					Containers: []corev1.Container{{
						Name: "coredns", Image: coreDNSImage, ImagePullPolicy: corev1.PullNever,
						Args: []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: coreDNSPort, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: coreDNSPort, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: probe("/ready", 8181),
						LivenessProbe:  probe("/health", 8080),
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), ReadOnlyRootFilesystem: ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"}}}}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(dnsNamespace).Create(ctx, dep, metav1.CreateOptions{}); create("Deployment", err) != nil {
		return create("Deployment", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: dnsNamespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNSIP, Selector: labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt(coreDNSPort)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(coreDNSPort)},
			},
		},
	}
	if _, err := cs.CoreV1().Services(dnsNamespace).Create(ctx, svc, metav1.CreateOptions{}); create("Service", err) != nil {
		return create("Service", err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(dnsNamespace).Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d of 1 replicas available", d.Status.AvailableReplicas)
		return d.Status.AvailableReplicas == 1, nil
	})
	if err != nil {
		return fmt.Errorf("the cluster DNS (CoreDNS in %s) did not become available (%s): %w", dnsNamespace, last, err)
	}
	return nil
}
