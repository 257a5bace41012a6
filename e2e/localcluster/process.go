package localcluster

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Process is one started program: its name, PID and log file.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// startProcess runs bin with args, logging to logDir/name.log. When detached the process gets its own
// process group and survives the caller; otherwise it is killed when the caller's thread dies. env,
// when not nil, is added to this program's environment.
func startProcess(name, logDir string, detached bool, env []string, bin string, args ...string) (*Process, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !detached {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, Log: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// Exited reports whether a process started by this program has ended (always false for processes
// read back from a state file).
func (p *Process) Exited() bool {
	if p.exited == nil {
		return !alive(p.PID)
	}
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs. It only ever signals this PID.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping %s (pid %d): %w", p.Name, p.PID, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", p.Name, p.PID, err)
	}
	for i := 0; i < 100 && !p.Exited(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state letter follows the parenthesised command name.
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] != 'Z'
		}
	}
	return true
}

// LogTail returns the last n bytes of the process's log, for failure messages.
func (p *Process) LogTail(n int64) string { return tail(p.Log, n) }

// tail returns the last n bytes of a log file, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	if st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// The ports the harness hands to its processes come from [portLow, portLow+portCount), below the
// kernel's ephemeral range (32768-60999 by default). A port the kernel picks in that range and the
// harness closes before the process binds it can meanwhile be taken by any outgoing connection (seen:
// a controller's metrics listener refused with "address already in use"); below it, only by another
// explicit bind. Each pick starts after the last one this process made, from a random offset.
const (
	portLow   = 20000
	portCount = 10000
)

var portNext = func() *atomic.Uint32 {
	var n atomic.Uint32
	n.Store(uint32(rand.IntN(portCount)))
	return &n
}()

// listenFree listens on the next free port of the harness's range on 127.0.0.1.
func listenFree() (net.Listener, error) {
	for i := 0; i < portCount; i++ {
		p := portLow + int(portNext.Add(1)%portCount)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no free TCP port on 127.0.0.1 between %d and %d", portLow, portLow+portCount-1)
}

// FreePort returns an unused TCP port on 127.0.0.1, outside the kernel's ephemeral range.
func FreePort() (int, error) {
	l, err := listenFree()
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	// Hold all listeners open until every port is chosen so that the ports are distinct.
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := listenFree()
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
