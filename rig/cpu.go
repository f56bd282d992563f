package rig

import (
	"time"

	"github.com/prometheus/procfs"
)

// CPU is process CPU time (user + system) by process class, read from
// /proc: what a run cost the machine, beside its wall time.
type CPU map[string]time.Duration

// The process classes a run's cost is split into.
const (
	CPUPods     = "pods"     // the pipeline's processes the run started
	CPUHarness  = "harness"  // this process: the harness, Toxiproxy, the fake vendor
	CPUPostgres = "postgres" // every postgres process, reaped backends included
	CPURabbitMQ = "rabbitmq" // the Erlang VM
)

// services maps a process name (/proc/PID/comm) to its class.
var services = map[string]string{"postgres": CPUPostgres, "beam.smp": CPURabbitMQ}

// ReadServiceCPU returns the CPU time the machine's Postgres and RabbitMQ
// have used so far, each process's own plus that of the children it
// reaped (a Postgres backend's time moves to the postmaster when it
// exits), and this process's own. The difference of two readings is what
// the services did in between: for every run on the machine at once, so a
// run's share is exact only when it runs alone.
func ReadServiceCPU() (CPU, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	out := CPU{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited while we read
		}
		class, ok := services[st.Comm]
		if !ok {
			continue
		}
		ticks := st.UTime + st.STime + uint(max(st.CUTime+st.CSTime, 0))
		out[class] += ticksToDuration(ticks)
	}
	self, err := fs.Self()
	if err != nil {
		return nil, err
	}
	st, err := self.Stat()
	if err != nil {
		return nil, err
	}
	out[CPUHarness] = ticksToDuration(st.UTime + st.STime)
	return out, nil
}

// ReadMachineCPU returns the CPU time every core of the machine has been
// busy so far (all but idle and iowait), and how many cores it has: the
// difference of two readings over a budget is what the budget cost the
// whole machine, runs side by side included, with nothing counted twice.
func ReadMachineCPU() (busy time.Duration, cores int, err error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0, err
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, 0, err
	}
	t := st.CPUTotal
	secs := t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal
	return time.Duration(secs * float64(time.Second)), len(st.CPU), nil
}

// userHZ is the kernel's clock tick for /proc times (USER_HZ, 100 on
// Linux, as procfs itself assumes).
const userHZ = 100

func ticksToDuration(t uint) time.Duration { return time.Duration(t) * time.Second / userHZ }

// Sub returns c − base, class by class.
func (c CPU) Sub(base CPU) CPU {
	out := CPU{}
	for k, v := range c {
		out[k] = v - base[k]
	}
	return out
}

// Total is the sum over the classes.
func (c CPU) Total() time.Duration {
	var t time.Duration
	for _, v := range c {
		t += v
	}
	return t
}
