package explore

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"os"
	"regexp"
	"strconv"
)

// RandDraw draws schedule choices from a seeded math/rand source, so the
// same seed gives the same schedules (reports; rapid is for tests).
type RandDraw struct{ R *rand.Rand }

// NewRandDraw returns a draw seeded with seed.
func NewRandDraw(seed int64) RandDraw { return RandDraw{R: rand.New(rand.NewSource(seed))} }

// Int returns an integer in [lo, hi].
func (d RandDraw) Int(_ string, lo, hi int) int { return lo + d.R.Intn(hi-lo+1) }

// addedDraws are the optional choices Generate gained after rapid saved
// failfiles, each with the value that adds nothing. A failfile's bitstream
// runs out at the first of them ("no longer valid"), but the draws it
// logged still say what the failing schedule was: ScriptDraw replays them.
// A new optional draw goes last in Generate, and here.
var addedDraws = map[string]int{
	"relay drain":                         0,
	"relay clock past the scheduled date": 5,
	"start elsewhere":                     3,
	"consent withdrawn":                   3,
	"a setting at its boundary":           2,
	"claim race":                          3,
	"misrouted publish":                   4,
	"workers' database down":              5,
	"sized faults":                        0,
	"swarm":                               0,
	"sustained load":                      1,
	"job link cut":                        1,
	"start by a rule":                     2,
	"consent withdrawn in flight":         3,
	"second grade history":                2,
	"vendor conversation":                 1,
	"held pair":                           1,
	"stale actor":                         1,
}

type choice struct {
	label string
	value int
}

// ScriptDraw replays recorded choices in order: a draw takes the next
// recorded value when its label matches, and a draw the recording
// predates (addedDraws) its value that adds nothing. Err says whether the
// recording fitted.
type ScriptDraw struct {
	choices []choice
	next    int
	err     error
}

// drawLine is how rapid logs a draw in a failfile's comments.
var drawLine = regexp.MustCompile(`\[rapid\] draw (.+): (-?\d+)$`)

// readFailfile reads the draws a rapid failfile logged ("# … [rapid] draw
// LABEL: VALUE").
func readFailfile(r io.Reader) (*ScriptDraw, error) {
	d := &ScriptDraw{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		m := drawLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.Atoi(m[2])
		if err != nil {
			return nil, fmt.Errorf("failfile draw %q: %w", m[1], err)
		}
		d.choices = append(d.choices, choice{m[1], v})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read failfile: %w", err)
	}
	if len(d.choices) == 0 {
		return nil, fmt.Errorf("failfile logs no draw")
	}
	return d, nil
}

// Int returns the recorded choice for label.
func (d *ScriptDraw) Int(label string, lo, hi int) int {
	if d.next < len(d.choices) && d.choices[d.next].label == label {
		c := d.choices[d.next]
		d.next++
		if c.value < lo || c.value > hi {
			d.fail(fmt.Errorf("draw %q: recorded %d, outside [%d, %d]", label, c.value, lo, hi))
			return lo
		}
		return c.value
	}
	if v, ok := addedDraws[label]; ok {
		return v
	}
	got := "nothing more"
	if d.next < len(d.choices) {
		got = fmt.Sprintf("%q", d.choices[d.next].label)
	}
	d.fail(fmt.Errorf("draw %d %q: the recording has %s", d.next+1, label, got))
	return lo
}

func (d *ScriptDraw) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Err is the first draw the recording did not fit, or the recorded draws
// left over.
func (d *ScriptDraw) Err() error {
	if d.err == nil && d.next < len(d.choices) {
		return fmt.Errorf("%d recorded draws left over from %q on", len(d.choices)-d.next, d.choices[d.next].label)
	}
	return d.err
}

// ReplayFailfile is the schedule a rapid failfile of the property test
// recorded, read from the draws it logged.
func ReplayFailfile(path string) (Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return Schedule{}, fmt.Errorf("replay failfile: %w", err)
	}
	defer f.Close()
	d, err := readFailfile(f)
	if err != nil {
		return Schedule{}, fmt.Errorf("%s: %w", path, err)
	}
	s := Generate(d)
	if err := d.Err(); err != nil {
		return Schedule{}, fmt.Errorf("%s does not fit Generate: %w", path, err)
	}
	return s, nil
}
