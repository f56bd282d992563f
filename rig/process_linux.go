package rig

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// podSysProcAttr makes the kernel kill a pod if the harness dies, so that no
// pipeline process outlives a crashed run. (Pdeathsig follows the OS thread
// that started the pod; the Go runtime keeps its threads unless a goroutine
// exits while locked to one, which this package never does.)
func podSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processStopped reports whether process pid is stopped by a signal (state
// T in /proc/PID/stat): a pod frozen at its pause-point, not just about to
// be.
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}
