//go:build !linux

package faults

import "syscall"

// podSysProcAttr has nothing to add outside Linux.
func podSysProcAttr() *syscall.SysProcAttr { return nil }
