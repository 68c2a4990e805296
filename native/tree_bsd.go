//go:build unix && !linux

package native

import "syscall"

func platformAttr(*syscall.SysProcAttr) {}
