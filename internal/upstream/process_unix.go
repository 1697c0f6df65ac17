//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so stop can
// signal everything it spawned (npx, sh -c, uvx ...) and not just the leader.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate asks the child's process group to exit.
func (p *process) terminate() { _ = syscall.Kill(-p.pid, syscall.SIGTERM) }

// kill ends the child's process group.
func (p *process) kill() { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }

// killGroup removes whatever is left of the child's group once the leader is
// reaped. The group id cannot be reused while any member lives, so this never
// hits an unrelated process; with no members left it is a no-op (ESRCH).
func (p *process) killGroup() { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }
