package localcluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// killWait bounds how long Kill waits for a SIGKILLed process to be reaped.
const killWait = 10 * time.Second

// Kill sends SIGKILL to the controller's process (its PID only, never its group) and waits until
// it has exited, as the kubelet does when a container is OOM-killed or its node dies. Killing a
// controller that has already exited does nothing.
func (c *Controller) Kill() error {
	if c.Exited() {
		return nil
	}
	if err := syscall.Kill(c.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s (pid %d): %w", c.Name, c.PID, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("%s (pid %d) did not exit within %v of SIGKILL", c.Name, c.PID, killWait)
	}
}

// Restart starts the controller again "as a Deployment would": a new process of the same binary with
// the same arguments (so the same probe, metrics and serving ports, storage directories and
// kubeconfig), and waits up to timeout until its /readyz answers 200. The controllers run with
// --leader-elect=false, so the new process starts reconciling at once. Each restart logs to a file
// of its own, <name>.restart-<n>.log next to <name>.log, so the log of the killed process is kept.
// Restarting a controller whose process is still running is an error: Kill it first.
func (c *Controller) Restart(ctx context.Context, timeout time.Duration) error {
	if c.bin == "" {
		return fmt.Errorf("%s was not started by StartControllers: do not know how to restart it", c.Name)
	}
	if !c.Exited() {
		return fmt.Errorf("%s (pid %d) is still running: Kill it before restarting it", c.Name, c.PID)
	}
	name := c.Name
	p, err := startProcess(fmt.Sprintf("%s.restart-%d", name, c.restarts+1), c.logDir, false, nil, c.bin, c.args...)
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	p.Name = name
	c.Process = p
	c.restarts++
	return WaitControllersReady(ctx, []*Controller{c}, timeout)
}

// KillAndRestart kills the controller with SIGKILL, waits until it has exited, and restarts it (see
// Restart). It returns when the new process is ready.
func (c *Controller) KillAndRestart(ctx context.Context, timeout time.Duration) error {
	if err := c.Kill(); err != nil {
		return err
	}
	return c.Restart(ctx, timeout)
}

// EnsureRunning restarts the controller when its process has exited (killed, or crashed), and does
// nothing when it runs. Test clean-ups call it so that later tests find every controller running.
func (c *Controller) EnsureRunning(ctx context.Context, timeout time.Duration) error {
	if !c.Exited() {
		return nil
	}
	return c.Restart(ctx, timeout)
}

// Restarts is how often the controller was restarted.
func (c *Controller) Restarts() int { return c.restarts }
