package localcluster

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// StartReplica starts another process of the binary c runs, as a second replica of its Deployment
// would run: c's arguments with leader election on (--leader-elect=true), free probe and metrics
// ports, and then overrides applied (flag name without dashes → value; it replaces every
// "--name=…" argument, or is appended). Listeners of the component's own (catalogd's content and
// CatalogMetadata addresses) and per-replica directories are the caller's to override. name is the
// process and log name (<logDir>/<name>.log next to c's). The replica can be Killed and Restarted like
// c; it is not in the Environment's controller list, so stopping it is the caller's job.
func StartReplica(c *Controller, name string, overrides map[string]string) (*Controller, error) {
	if c.bin == "" {
		return nil, fmt.Errorf("%s was not started by StartControllers: do not know how to start a replica of it", c.Name)
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	health := "127.0.0.1:" + strconv.Itoa(ports[0])
	metrics := "127.0.0.1:" + strconv.Itoa(ports[1])
	all := map[string]string{
		"health-probe-bind-address": health,
		"metrics-bind-address":      metrics,
		"leader-elect":              "true",
	}
	for k, v := range overrides {
		all[k] = v
	}
	args := ReplaceFlags(c.args, all)
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, err
	}
	p, err := startProcess(name, c.logDir, false, nil, c.bin, args...)
	if err != nil {
		return nil, err
	}
	return &Controller{Process: p, HealthURL: "http://" + health + "/readyz", MetricsAddr: metrics,
		bin: c.bin, args: args, logDir: c.logDir}, nil
}

// ReplaceFlags returns args with every "--name=value" argument whose name is a key of flags set to
// flags[name], and the flags that were absent appended (in sorted order), as "--name=value".
func ReplaceFlags(args []string, flags map[string]string) []string {
	out := make([]string, 0, len(args)+len(flags))
	seen := map[string]bool{}
	for _, a := range args {
		name, _, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if v, replace := flags[name]; ok && strings.HasPrefix(a, "-") && replace {
			out = append(out, "--"+name+"="+v)
			seen[name] = true
			continue
		}
		out = append(out, a)
	}
	names := make([]string, 0, len(flags))
	for k := range flags {
		if !seen[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, "--"+k+"="+flags[k])
	}
	return out
}

// Args returns the arguments the controller's process was started with.
func (c *Controller) Args() []string { return append([]string(nil), c.args...) }
