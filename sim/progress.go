package sim

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far through the virtual day the run is, with the
// counts an operator watches. A nil writer shows nothing.
type progress struct {
	bar   *progressbar.ProgressBar
	w     io.Writer
	start time.Time
	plain bool // not a terminal: a line per virtual hour instead of a bar
	hour  int
}

func newProgress(w io.Writer, d Day) *progress {
	p := &progress{start: d.at("07:55"), w: w, hour: -1}
	if w == nil {
		return p
	}
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		p.plain = true
		return p
	}
	// From 07:55 to the next morning's relay runs: the bar is in virtual
	// minutes.
	total := int64(d.at("08:15").AddDate(0, 0, 1).Sub(p.start) / time.Minute)
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetDescription("simulate "+d.Name),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetItsString("virtual min"),
	)
	return p
}

func (p *progress) update(s Sample) {
	line := fmt.Sprintf("%s  sent %d  ERROR %d  EXPIRED %d  alerts %d  queued %d",
		s.At.Format("Jan 2 15:04"), s.Inbox[history.InboxSent], s.Inbox[history.InboxError], s.Outbox[history.OutboxExpired], s.Alerts, s.Main+s.Retry)
	if p.plain {
		if h := s.At.Hour(); h != p.hour {
			p.hour = h
			_, _ = fmt.Fprintln(p.w, "simulate: "+line)
		}
		return
	}
	if p.bar == nil {
		return
	}
	p.bar.Describe(line)
	_ = p.bar.Set64(int64(s.At.Sub(p.start) / time.Minute))
}

func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	_ = p.bar.Finish()
	_, _ = fmt.Fprintln(p.w)
}
