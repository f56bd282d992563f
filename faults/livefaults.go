package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/rig"
)

// toxicFault is the common part of the link faults: the Toxiproxy fault
// while it is in place.
type toxicFault struct {
	t atomic.Pointer[ToxicHandle]
}

// put puts a toxic on the link called link with add, and keeps it.
func (f *toxicFault) put(w World, link string, add func(LinkHandle) (ToxicHandle, error)) error {
	l, err := w.Link(link)
	if err != nil {
		return err
	}
	t, err := add(l)
	if err != nil {
		return err
	}
	f.t.Store(&t)
	return nil
}

// Recover removes the toxic (or brings the link up).
func (f *toxicFault) Recover(context.Context, World) error {
	t := f.t.Load()
	if t == nil {
		return nil
	}
	return (*t).Remove()
}

// Fired reports whether traffic met the toxic while it was in place.
func (f *toxicFault) Fired(World) (bool, string) {
	t := f.t.Load()
	if t == nil {
		return false, "never in place"
	}
	r := (*t).Report()
	return r.Fired, r.Detail
}

// LinkDown stops a link: its port refuses connections and the open ones
// are cut.
type LinkDown struct {
	Link string
	toxicFault
}

// PartlyBlind: a down link cannot count the dials it refuses.
func (l *LinkDown) PartlyBlind() {}

// Family is "down".
func (l *LinkDown) Family() string { return KindDown }

// Target is the link.
func (l *LinkDown) Target() string { return l.Link }

// Inject takes the link down.
func (l *LinkDown) Inject(ctx context.Context, w World) error {
	return l.put(w, l.Link, func(h LinkHandle) (ToxicHandle, error) { return h.Down(ctx) })
}

func (l *LinkDown) String() string { return "down " + l.Link }

// LinkLatency delays every byte on one direction of a link.
type LinkLatency struct {
	Link      string
	Direction rig.Direction
	Delay     time.Duration
	toxicFault
}

// Family is "latency".
func (l *LinkLatency) Family() string { return KindLatency }

// Target is the link.
func (l *LinkLatency) Target() string { return l.Link }

// Inject adds the latency toxic.
func (l *LinkLatency) Inject(ctx context.Context, w World) error {
	return l.put(w, l.Link, func(h LinkHandle) (ToxicHandle, error) { return h.Latency(ctx, l.Direction, l.Delay) })
}

func (l *LinkLatency) String() string {
	return fmt.Sprintf("latency %s on %s %s", l.Delay, l.Link, l.Direction)
}

// LinkStall passes nothing on one direction of a link until recovered
// (Toxiproxy's timeout toxic with no timeout).
type LinkStall struct {
	Link      string
	Direction rig.Direction
	toxicFault
}

// Family is "stall".
func (l *LinkStall) Family() string { return KindStall }

// Target is the link.
func (l *LinkStall) Target() string { return l.Link }

// Inject adds the stall.
func (l *LinkStall) Inject(ctx context.Context, w World) error {
	return l.put(w, l.Link, func(h LinkHandle) (ToxicHandle, error) { return h.Stall(ctx, l.Direction) })
}

func (l *LinkStall) String() string { return fmt.Sprintf("stall on %s %s", l.Link, l.Direction) }

// VendorRule programs the fake vendor: one fault mode for one message (or
// for token requests). It fired when a request met the mode: for a report
// mode, a report lookup of the message.
type VendorRule struct {
	Rule fakevendor.Rule
}

// Family is "vendor".
func (v *VendorRule) Family() string { return KindVendor }

// Target is the mode.
func (v *VendorRule) Target() string { return string(v.Rule.Mode) }

// Inject installs the rule.
func (v *VendorRule) Inject(_ context.Context, w World) error { return w.Vendor().AddRule(v.Rule) }

// Recover removes every rule: a run programs the vendor for one phase.
func (v *VendorRule) Recover(_ context.Context, w World) error {
	w.Vendor().ResetRules()
	return nil
}

// Fired counts the requests that met the mode.
func (v *VendorRule) Fired(w World) (bool, string) {
	if v.Rule.RefKey == "" {
		n := w.Vendor().Fired()[v.Rule.Mode]
		return n > 0, fmt.Sprintf("fired %d times", n)
	}
	n := 0
	if v.Rule.Mode.ForReports() {
		for _, l := range w.Vendor().Lookups() {
			if l.RefKey == v.Rule.RefKey && l.Mode == v.Rule.Mode {
				n++
			}
		}
	} else {
		for _, c := range w.Vendor().CallLog() {
			if c.RefKey == v.Rule.RefKey && c.Mode == v.Rule.Mode {
				n++
			}
		}
	}
	return n > 0, fmt.Sprintf("%s fired %d times", v.Rule.RefKey, n)
}

func (v *VendorRule) String() string {
	s := "vendor " + string(v.Rule.Mode)
	if v.Rule.RefKey != "" {
		s += " for " + v.Rule.RefKey
	}
	if v.Rule.Times > 0 {
		s += fmt.Sprintf(" ×%d", v.Rule.Times)
	}
	return s
}
