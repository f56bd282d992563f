package faults

import "syscall"

// podSysProcAttr makes the kernel kill a pod if the harness dies, so that no
// pipeline process outlives a crashed run. (Pdeathsig follows the OS thread
// that started the pod; the Go runtime keeps its threads unless a goroutine
// exits while locked to one, which this package never does.)
func podSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
