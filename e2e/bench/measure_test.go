package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// processStats reads what /proc says of one process.
type processStats struct{ pid int }

func controllerProcess(name string) processStats {
	if c := olm.env.Controller(name); c != nil {
		return processStats{pid: c.PID}
	}
	return processStats{}
}

// clusterProcess is a process of the local control plane (kube-apiserver, etcd, kwok …).
func clusterProcess(name string) processStats {
	if olm.env.Cluster == nil {
		return processStats{}
	}
	for _, p := range olm.env.Cluster.Processes {
		if p.Name == name {
			return processStats{pid: p.PID}
		}
	}
	return processStats{}
}

// rssMB is the process's resident set in MiB (0 when unknown).
func (p processStats) rssMB() float64 {
	if p.pid == 0 {
		return 0
	}
	rss, err := localcluster.RSS(p.pid)
	if err != nil {
		return 0
	}
	return float64(rss) / (1 << 20)
}

// peakRSSMB is the largest resident set the process has had since it started (VmHWM), in MiB.
func (p processStats) peakRSSMB() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuSeconds is the CPU time (user + system) the process used so far.
func (p processStats) cpuSeconds() float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// cpuReading is the CPU seconds used so far by the controllers, kube-apiserver, etcd, the rest of
// the control plane (kube-controller-manager, kube-scheduler, kwok), the benchmark's own process
// (its clients, watches and the registry the bundles are pulled from), and by the whole machine
// (every process: /proc/stat's busy time over all cores).
type cpuReading struct {
	operatorController, rukpak, apiserver, etcd, controlPlane, bench, machineBusy, machineAll float64
}

func cpuNow() cpuReading {
	r := cpuReading{
		operatorController: controllerProcess("operator-controller").cpuSeconds(), rukpak: controllerProcess("rukpak").cpuSeconds(),
		apiserver: clusterProcess("kube-apiserver").cpuSeconds(), etcd: clusterProcess("etcd").cpuSeconds(),
		controlPlane: clusterProcess("kube-controller-manager").cpuSeconds() + clusterProcess("kube-scheduler").cpuSeconds() +
			clusterProcess("kwok").cpuSeconds(),
		bench: processStats{pid: os.Getpid()}.cpuSeconds(),
	}
	r.machineBusy, r.machineAll = machineCPU()
	return r
}

func (r cpuReading) minus(o cpuReading) cpuReading {
	return cpuReading{r.operatorController - o.operatorController, r.rukpak - o.rukpak, r.apiserver - o.apiserver,
		r.etcd - o.etcd, r.controlPlane - o.controlPlane, r.bench - o.bench, r.machineBusy - o.machineBusy, r.machineAll - o.machineAll}
}

// String says where the CPU went, and how busy the machine's cores were (100 %: every core busy).
func (r cpuReading) String() string {
	busy := 0.0
	if r.machineAll > 0 {
		busy = 100 * r.machineBusy / r.machineAll
	}
	return fmt.Sprintf("operator-controller %.1f, rukpak %.1f, kube-apiserver %.1f, etcd %.1f, "+
		"kube-controller-manager+kube-scheduler+kwok %.1f, the benchmark's process %.1f, every process %.1f CPU-s; the cores %.0f %% busy",
		r.operatorController, r.rukpak, r.apiserver, r.etcd, r.controlPlane, r.bench, r.machineBusy, busy)
}

// machineCPU is /proc/stat's CPU seconds of every core: busy (all but idle and iowait) and all.
func machineCPU() (busy, all float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		if i >= 8 { // guest time is already counted in user
			break
		}
		x, _ := strconv.ParseFloat(v, 64)
		all += x
		if i != 3 && i != 4 { // idle, iowait
			busy += x
		}
	}
	return busy / 100, all / 100 // USER_HZ
}

// etcdDBBytes is the size of etcd's bbolt file, which is what etcd_mvcc_db_total_size_in_bytes
// reports (the benchmark's etcd serves no metrics listener of its own).
func etcdDBBytes() float64 {
	if olm.env.Cluster == nil {
		return 0
	}
	fi, err := os.Stat(filepath.Join(olm.env.Cluster.Dir, "etcd", "member", "snap", "db"))
	if err != nil {
		return 0
	}
	return float64(fi.Size())
}

// sumMetric adds up every sample of the counter name in a Prometheus text exposition.
func sumMetric(exposition []byte, name string) float64 {
	total := 0.0
	eachSample(exposition, name, func(_ string, v float64) { total += v })
	return total
}

// eachSample calls fn with the labels (`a="x",b="y"`, empty when none) and value of every sample of
// name in a Prometheus text exposition.
func eachSample(exposition []byte, name string, fn func(labels string, v float64)) {
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest == "" || (rest[0] != '{' && rest[0] != ' ')) {
			continue
		}
		labels := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			fn(labels, v)
		}
	}
}

// apiserverRequests is kube-apiserver's apiserver_request_total, summed over every label: every
// request any client made (the controllers, kube-controller-manager, the scheduler, kwok, this
// benchmark); and the same counter by verb, resource and subresource.
func apiserverRequests(ctx context.Context) (float64, map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(benchConfig())
	if err != nil {
		return 0, nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, nil, err
	}
	return sumMetric(raw, "apiserver_request_total"), requestsByKind(raw), nil
}

// requestsByKind sums apiserver_request_total by "VERB resource[/subresource]".
func requestsByKind(exposition []byte) map[string]float64 {
	by := map[string]float64{}
	eachSample(exposition, "apiserver_request_total", func(ls string, v float64) {
		labels := metricLabels(ls)
		kind := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			kind += "/" + sub
		}
		by[kind] += v
	})
	return by
}

// metricLabels parses `a="x",b="y"` (label values here hold no quotes or commas).
func metricLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// controllerMetrics is what a controller serves on its authenticated metrics endpoint.
func controllerMetrics(ctx context.Context, name string) ([]byte, error) {
	c := olm.env.Controller(name)
	if c == nil {
		return nil, fmt.Errorf("no controller %s", name)
	}
	token, err := metricsToken(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.MetricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The controllers serve a certificate of their own making here; only the loopback is dialled.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s metrics: %s: %s", name, resp.Status, body)
	}
	return body, nil
}

// queueStats is one controller's work queue, from controller-runtime's metrics: how many reconciles
// ran, the seconds they took, and the seconds their requests waited in the queue before a worker
// took them.
type queueStats struct {
	reconciles, reconcileSeconds, queueSeconds float64
}

// addQueueStats adds to out, keyed "process/queue", the work queues in process's metrics exposition.
func addQueueStats(out map[string]queueStats, process string, exposition []byte) {
	add := func(metric, label string, set func(q *queueStats, v float64)) {
		eachSample(exposition, metric, func(ls string, v float64) {
			key := process + "/" + metricLabels(ls)[label]
			q := out[key]
			set(&q, v)
			out[key] = q
		})
	}
	add("controller_runtime_reconcile_total", "controller", func(q *queueStats, v float64) { q.reconciles += v })
	add("controller_runtime_reconcile_time_seconds_sum", "controller", func(q *queueStats, v float64) { q.reconcileSeconds += v })
	add("workqueue_queue_duration_seconds_sum", "name", func(q *queueStats, v float64) { q.queueSeconds += v })
}

// queueSummary says, for every queue that reconciled anything between before and after, the
// reconciles per Operator and the mean time a reconcile took and its request waited in the queue.
func queueSummary(before, after map[string]queueStats, n int) string {
	var keys []string
	for k, a := range after {
		if a.reconciles-before[k].reconciles > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		a, b := after[k], before[k]
		r := a.reconciles - b.reconciles
		parts = append(parts, fmt.Sprintf("%s %.2f reconciles per Operator, %.0f ms each, %.0f ms queued each",
			k, r/float64(n), 1000*(a.reconcileSeconds-b.reconcileSeconds)/r, 1000*(a.queueSeconds-b.queueSeconds)/r))
	}
	return strings.Join(parts, "; ")
}

// benchConfig is the admin configuration without a client-side rate limit.
func benchConfig() *rest.Config {
	cfg := rest.CopyConfig(olm.env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// metricsToken is a token of a ServiceAccount allowed to GET /metrics, made once.
func metricsToken(ctx context.Context) (string, error) {
	olm.tokenOnce.Do(func() {
		olm.token, olm.tokenErr = newMetricsToken(ctx)
	})
	return olm.token, olm.tokenErr
}

func newMetricsToken(ctx context.Context) (string, error) {
	cs, err := kubernetes.NewForConfig(benchConfig())
	if err != nil {
		return "", err
	}
	const name, ns = "olmv1-bench-metrics", "default"
	create := func(err error) error {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err = create(err); err != nil {
		return "", err
	}
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	if err = create(err); err != nil {
		return "", err
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err = create(err); err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	// The controllers' authorizers see the new binding through an informer: give them a moment.
	time.Sleep(2 * time.Second)
	return tr.Status.Token, nil
}

// requestCounts is one reading of the request counters, and of the controllers' work queues read
// from the same metrics.
type requestCounts struct {
	apiserver, operatorController, rukpak float64
	byKind                                map[string]float64 // kube-apiserver's, by verb and resource
	queues                                map[string]queueStats
}

// readRequestCounts reads kube-apiserver's request counters and, from each controller's metrics,
// its own count of the requests it sent (client-go's rest_client_requests_total: the per-controller
// split that kube-apiserver's metrics, which carry no user agent, cannot give) and its work queues.
func readRequestCounts(ctx context.Context) (requestCounts, error) {
	r := requestCounts{queues: map[string]queueStats{}}
	var err error
	if r.apiserver, r.byKind, err = apiserverRequests(ctx); err != nil {
		return r, err
	}
	for name, sent := range map[string]*float64{"operator-controller": &r.operatorController, "rukpak": &r.rukpak} {
		body, err := controllerMetrics(ctx, name)
		if err != nil {
			return r, err
		}
		*sent = sumMetric(body, "rest_client_requests_total")
		addQueueStats(r.queues, name, body)
	}
	return r, nil
}

// minus is the requests sent between o and r (the queues are compared by queueSummary).
func (r requestCounts) minus(o requestCounts) requestCounts {
	d := requestCounts{apiserver: r.apiserver - o.apiserver, operatorController: r.operatorController - o.operatorController,
		rukpak: r.rukpak - o.rukpak, byKind: map[string]float64{}}
	for k, v := range r.byKind {
		if v -= o.byKind[k]; v > 0 {
			d.byKind[k] = v
		}
	}
	return d
}

// topKinds is the breakdown's largest entries per Operator, largest first, as "VERB resource 12.3".
func (r requestCounts) topKinds(n, top int) []string {
	kinds := make([]string, 0, len(r.byKind))
	for k := range r.byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return r.byKind[kinds[i]] > r.byKind[kinds[j]] })
	if len(kinds) > top {
		kinds = kinds[:top]
	}
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = fmt.Sprintf("%s %.1f", k, r.byKind[k]/float64(n))
	}
	return out
}

// profiler captures CPU and heap profiles of the controllers through their --pprof-bind-address,
// when $OLMV1_BENCH_PROFILE_DIR names a directory (see startOLM).
type profiler struct {
	dir  string
	done chan struct{}
}

// startCPUProfiles asks each profiled controller for a CPU profile of the next seconds seconds,
// written to dir/<controller>-<label>.cpu.pprof.
func startCPUProfiles(label string, seconds int) *profiler {
	p := &profiler{dir: os.Getenv("OLMV1_BENCH_PROFILE_DIR"), done: make(chan struct{})}
	if p.dir == "" {
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		errs := make(chan error, len(olm.pprof)+1)
		for name, addr := range olm.pprof {
			go func() {
				errs <- fetchProfile(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds),
					filepath.Join(p.dir, fmt.Sprintf("%s-%s.cpu.pprof", name, label)), time.Duration(seconds+30)*time.Second)
			}()
		}
		// kube-apiserver serves the same profile (its --profiling is on by default) to the bench's
		// admin identity: where the control plane's largest CPU share goes.
		go func() {
			errs <- apiserverProfile(seconds, filepath.Join(p.dir, fmt.Sprintf("kube-apiserver-%s.cpu.pprof", label)))
		}()
		for range len(olm.pprof) + 1 {
			if err := <-errs; err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		}
	}()
	return p
}

// heapProfiles writes each profiled controller's heap profile to dir/<controller>-<label>.heap.pprof.
func heapProfiles(label string) {
	dir := os.Getenv("OLMV1_BENCH_PROFILE_DIR")
	if dir == "" {
		return
	}
	for name, addr := range olm.pprof {
		if err := fetchProfile("http://"+addr+"/debug/pprof/heap?gc=1", filepath.Join(dir, fmt.Sprintf("%s-%s.heap.pprof", name, label)), time.Minute); err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
		}
	}
}

// apiserverProfile writes kube-apiserver's CPU profile of the next seconds seconds to path.
func apiserverProfile(seconds int, path string) error {
	cs, err := kubernetes.NewForConfig(benchConfig())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
	defer cancel()
	raw, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).
		Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver profile: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

func fetchProfile(url, path string, timeout time.Duration) error {
	hc := &http.Client{Timeout: timeout}
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// controllerRSS is the RSS of a controller process in MiB (0 when unknown).
func controllerRSS(name string) float64 { return controllerProcess(name).rssMB() }

// controllerCPU is the CPU time (user + system) a controller process used so far, in seconds.
func controllerCPU(name string) float64 { return controllerProcess(name).cpuSeconds() }

// ensurePodCapacity adds kwok fake nodes (kwok-bench-node-<i>, shaped like the local cluster's own)
// until the nodes hold pods pods at 110 a node: the local cluster starts with 2 nodes (220 pods),
// and an Operator's Deployment is not Available, nor the Operator Healthy, while its pod is Pending.
func ensurePodCapacity(ctx context.Context, pods int) error {
	cs, err := kubernetes.NewForConfig(benchConfig())
	if err != nil {
		return err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	for i := 0; 110*(len(nodes.Items)+i) < pods+50; i++ {
		name := fmt.Sprintf("kwok-bench-node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{localcluster.FakeNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "kubernetes.io/role": "agent"},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node %s: %w", name, err)
		}
	}
	return nil
}
