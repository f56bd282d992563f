package sim

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// What every chart shares: whole-number count axes, the planned faults
// marked on the time axis, and a legend beside the plot.

// countTicks labels an axis of counts with whole numbers only: no
// "5000.00", no tick between 0 and 1.
type countTicks struct{}

// Ticks returns the default ticks at whole values, labelled as integers.
func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	labelled := 0
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
			labelled++
		}
		out = append(out, t)
	}
	if labelled < 2 {
		out = nil
		for v := math.Ceil(lo); v <= math.Floor(hi); v++ {
			out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
		}
	}
	return out
}

// atLeastOne keeps an all-zero count axis from collapsing.
func atLeastOne(p *plot.Plot) {
	if p.Y.Max < 1 {
		p.Y.Max = 1
	}
}

// faultNames are the planned events that break something, as the charts
// mark them.
var faultNames = map[string]string{
	"worker-kill": "worker killed", "relay-kill": "relay kill", "broker-blip": "broker outage",
	"db-blip": "database outage", "deploy": "deploy",
}

// faultMark is one planned fault as the charts mark it.
type faultMark struct {
	N    int
	At   time.Time
	What string
	Note string
}

// faultMarks lists the day's planned faults in the order they happened,
// numbered from 1.
func faultMarks(r *Result) []faultMark {
	var out []faultMark
	for _, e := range r.Events {
		name, ok := faultNames[e.What]
		if !ok {
			continue
		}
		out = append(out, faultMark{N: len(out) + 1, At: e.Actual, What: name, Note: e.Note})
	}
	return out
}

var faultStyle = draw.LineStyle{Color: color.Gray{Y: 70}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}

// markFaults draws a dashed grey line where each planned fault happened,
// numbered at the top (the numbers step down over three heights so close
// faults stay readable); x maps a fault's instant to the axis.
func markFaults(p *plot.Plot, marks []faultMark, x func(time.Time) float64) error {
	if len(marks) == 0 {
		return nil
	}
	p.Y.Max = max(p.Y.Max, 1) * 1.15
	top := p.Y.Max
	var labels plotter.XYLabels
	for i, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: x(m.At), Y: p.Y.Min}, {X: x(m.At), Y: top * 0.97}})
		if err != nil {
			return fmt.Errorf("fault mark: %w", err)
		}
		l.LineStyle = faultStyle
		p.Add(l)
		if i == 0 {
			p.Legend.Add("planned fault", l)
		}
		y := top * (0.97 - 0.06*float64(i%3))
		labels.XYs = append(labels.XYs, plotter.XY{X: x(m.At), Y: y})
		labels.Labels = append(labels.Labels, strconv.Itoa(m.N))
	}
	ls, err := plotter.NewLabels(labels)
	if err != nil {
		return fmt.Errorf("fault labels: %w", err)
	}
	for i := range ls.TextStyle {
		ls.TextStyle[i].Color = faultStyle.Color
		ls.TextStyle[i].XAlign = draw.XLeft
	}
	ls.Offset = vg.Point{X: vg.Points(1.5)}
	p.Add(ls)
	return nil
}

// faultCaption lists the numbered faults for a chart's caption.
func faultCaption(marks []faultMark) string {
	if len(marks) == 0 {
		return ""
	}
	var parts []string
	for _, m := range marks {
		parts = append(parts, fmt.Sprintf("%d %s %s", m.N, m.At.Format("15:04"), m.What))
	}
	return " Dashed grey lines: the planned faults — " + strings.Join(parts, ", ") + "."
}

// save draws p as a PNG with its legend beside the plot, never over the
// data.
func save(p *plot.Plot, dir, file string) error {
	const w, h = 20 * vg.Centimeter, 9 * vg.Centimeter
	c, err := draw.NewFormattedCanvas(w, h, "png")
	if err != nil {
		return fmt.Errorf("draw %s: %w", file, err)
	}
	dc := draw.New(c)
	leg := p.Legend
	p.Legend = plot.NewLegend()
	leg.Top, leg.Left = true, true
	lr := leg.Rectangle(dc)
	margin := lr.Max.X - lr.Min.X + 0.4*vg.Centimeter
	p.Draw(draw.Crop(dc, 0, -margin, 0, 0))
	leg.Draw(draw.Crop(dc, w-margin+0.2*vg.Centimeter, 0, 0, -1.2*vg.Centimeter))
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		return fmt.Errorf("draw %s: %w", file, err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("draw %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("draw %s: %w", file, err)
	}
	return nil
}
