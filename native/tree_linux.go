package native

import "syscall"

// platformAttr makes the kernel kill the child if the host dies first, so
// a crashed host does not leave a script running.
func platformAttr(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
