//go:build !unix

package upstream

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist.
func setProcessGroup(*exec.Cmd) {}

// terminate has no gentle form here; the staged stop goes straight on to kill.
func (p *process) terminate() {}

// kill ends the child.
func (p *process) kill() { _ = p.cmd.Process.Kill() }

// killGroup is a no-op without process groups.
func (p *process) killGroup() {}
