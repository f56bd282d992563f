package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
)

// CPU is processor time spent during a timed span, split by who spent it:
// the broker (every beam.smp process), the database (every postgres
// process, with the postmaster's reaped children, so a backend that exits
// inside the span still counts), this process (the relay or worker under
// test and the bench's own bookkeeping) and the rest of the machine. On a
// shared machine a rate moves with the load; the CPU a message costs moves
// much less, so the report shows both.
type CPU struct {
	Broker, Database, Self, Other time.Duration
}

// Total is all CPU time spent during the span.
func (c CPU) Total() time.Duration { return c.Broker + c.Database + c.Self + c.Other }

// add returns c + o.
func (c CPU) add(o CPU) CPU {
	return CPU{c.Broker + o.Broker, c.Database + o.Database, c.Self + o.Self, c.Other + o.Other}
}

// cpuSample is the cumulative CPU time of each group at one instant.
type cpuSample struct {
	ok                        bool
	machine, broker, db, self time.Duration
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// this runs on (sysconf(_SC_CLK_TCK) is 100 on all mainstream
// architectures).
const clockTicks = 100

// sampleCPU reads /proc. On a system without it the sample is empty and
// the span's CPU is not reported.
func sampleCPU() cpuSample {
	busy, _, err := rig.ReadMachineCPU()
	if err != nil {
		return cpuSample{}
	}
	s := cpuSample{ok: true, machine: busy}
	s.self = procCPU("/proc/self/stat", false)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(d + "/comm")
		if err != nil {
			continue
		}
		switch strings.TrimSpace(string(comm)) {
		case "beam.smp":
			s.broker += procCPU(d+"/stat", false)
		case "postgres":
			// Only the postmaster (whose parent is not postgres) adds its
			// reaped children; a backend's children are none.
			s.db += procCPU(d+"/stat", isPostmaster(d))
		}
	}
	return s
}

// isPostmaster reports whether the postgres process in dir d is the
// postmaster: its parent is not a postgres process.
func isPostmaster(d string) bool {
	ppid := statField(d+"/stat", 1)
	comm, err := os.ReadFile("/proc/" + ppid + "/comm")
	return err != nil || strings.TrimSpace(string(comm)) != "postgres"
}

// procCPU is a process's utime+stime, with its reaped children's when
// children is set.
func procCPU(path string, children bool) time.Duration {
	total := time.Duration(0)
	fields := []int{11, 12} // utime, stime (after the comm field)
	if children {
		fields = append(fields, 13, 14) // cutime, cstime
	}
	for _, i := range fields {
		n, _ := strconv.ParseInt(statField(path, i), 10, 64)
		total += ticks(n)
	}
	return total
}

// statField is field i of /proc/PID/stat counted after the command name,
// which is in parentheses and may hold spaces: 0 is the state, 1 the
// parent's pid, 11 utime, 12 stime, 13 cutime, 14 cstime.
func statField(path string, i int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	// The name ends at the last ')': it may hold ") " itself.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return ""
	}
	f := strings.Fields(string(b[end+1:]))
	if i >= len(f) {
		return ""
	}
	return f[i]
}

func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }

// cpuSince is the CPU spent since s0, by group; ok is false without /proc.
func cpuSince(s0 cpuSample) (CPU, bool) {
	s1 := sampleCPU()
	if !s0.ok || !s1.ok {
		return CPU{}, false
	}
	// A group's sum can fall: a backend the postmaster reaps while a
	// sample is read (after the postmaster's stat, before its own) is in
	// neither. What a group lost that way is not known, so a fall counts 0.
	c := CPU{Broker: max(s1.broker-s0.broker, 0), Database: max(s1.db-s0.db, 0), Self: s1.self - s0.self}
	c.Other = max(s1.machine-s0.machine-c.Broker-c.Database-c.Self, 0)
	return c, true
}

// perMsg formats the CPU per message as "total µs (broker b, database d,
// relay s, other o)".
func (c CPU) perMsg(msgs int, self string) string {
	if msgs <= 0 {
		return ""
	}
	us := func(d time.Duration) float64 { return usPer(d, msgs) }
	return fmt.Sprintf("%.0f µs (broker %.0f, database %.0f, %s %.0f, other %.0f)",
		us(c.Total()), us(c.Broker), us(c.Database), self, us(c.Self), us(c.Other))
}

// cpuPerMsg is the µs of CPU per message of measurement id, NaN when it
// was not measured.
func (r *Report) cpuPerMsg(id string) float64 {
	return r.cpuShare(id, CPU.Total)
}

// cpuShare is the part of measurement id's CPU that share picks, µs per
// message, NaN when it was not measured.
func (r *Report) cpuShare(id string, share func(CPU) time.Duration) float64 {
	x, ok := r.Result(id)
	if !ok || !x.CPUOK || x.Msgs <= 0 {
		return math.NaN()
	}
	return usPer(share(x.CPU), x.Msgs)
}

// usPer is d in µs per message.
func usPer(d time.Duration, msgs int) float64 { return float64(d.Microseconds()) / float64(msgs) }

// cpuLines renders the CPU per message of every measurement that has it.
func (r *Report) cpuLines() []string {
	var out []string
	for _, x := range r.Results {
		if x.Err != "" || !x.CPUOK {
			continue
		}
		self := "relay"
		if strings.HasPrefix(x.ID, "raw.") {
			self = "client"
		}
		out = append(out, fmt.Sprintf("`%s`: %s", x.ID, x.CPU.perMsg(x.Msgs, self)))
	}
	return out
}

// infoRows are figures beside the targets, with no goal of their own: the
// relay against raw publish with as many messages in flight as it may
// have, and the relay against raw publish by CPU per message.
func (r *Report) infoRows() []Target {
	f := r.Figures()
	return []Target{
		{What: "relay vs raw publish with 50 in flight, by rate (the relay also claims and marks its rows, on the same cores)", Value: num(f.RelayVsRaw, "%.2f")},
		{What: fmt.Sprintf("relay vs raw publish with %d in flight, the draining relay's own bound (batch 50 × relay-drain-depth)", DrainWindow()),
			Value: num(f.RelayVsRawDrain, "%.2f")},
		{What: fmt.Sprintf("relay vs raw publish with 50 in flight by CPU per message (raw %s µs ÷ relay %s µs)", num(f.RawCPU, "%.0f"), num(f.RelayCPU, "%.0f")),
			Value: num(f.RawVsRelayCPU, "%.2f")},
	}
}
