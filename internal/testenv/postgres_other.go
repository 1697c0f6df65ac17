//go:build !linux

package testenv

import "syscall"

// pgSysProcAttr runs the server as cred; StopPostgres stops it.
func pgSysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
