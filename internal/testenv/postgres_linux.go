package testenv

import "syscall"

// pgSysProcAttr runs the server as cred and has the kernel stop it when the
// test process dies without calling StopPostgres (a failed TestMain, a
// timeout's panic). Pdeathsig fires when the starting thread exits, which a
// Go runtime thread does only for a locked goroutine that ends, so it is a
// backstop, not the stop path.
func pgSysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT}
}
