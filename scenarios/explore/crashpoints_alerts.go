package explore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
)

// alertPost is the crash-point step of an alert's HTTP post to the sink.
const alertPost = "http:alert-alerts"

// durable matches the statements that change what the database holds: a
// crash after one and before the alert that tells of it, or after an
// alert and before the change it announced, is the window AlertWindows
// runs in full.
var durable = regexp.MustCompile(`^sql:(update|insert|delete|with)-[0-9a-f]+$|^sql:commit$`)

// AlertWindows runs the workload's discovery and returns every crash
// point, in every process, that lies between an alert the process posted
// and the durable writes on either side of it: from the after side of the
// last write before the post to the before side of the first write after
// it, both included, by the order the process reached them. A state
// change committed before its alert, and one announced by an alert before
// it commits, are each separated from their alert by one of these points.
func AlertWindows(ctx context.Context, w CrashWorkload, o scenarios.Options) ([]CrashTarget, scenarios.Result, error) {
	var out []CrashTarget
	res, err := discover(ctx, w, o, func(dir string) error {
		for _, proc := range CrashProcesses {
			hits, err := readOrder(filepath.Join(dir, proc+".trace"))
			if err != nil {
				return err
			}
			for _, p := range alertWindows(hits) {
				out = append(out, CrashTarget{Process: proc, Point: p})
			}
		}
		return nil
	})
	return out, res, err
}

// readOrder reads one process's trace in the order its points were
// reached; a missing trace is a process that reached none.
func readOrder(path string) ([]crashpoint.Point, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read crash-point trace: %w", err)
	}
	defer f.Close()
	var out []crashpoint.Point
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, n, ok := strings.Cut(sc.Text(), " ")
		hit, err := strconv.Atoi(n)
		i := strings.LastIndexByte(name, ':')
		if !ok || err != nil || i < 0 {
			continue
		}
		out = append(out, crashpoint.Point{Step: name[:i], Side: crashpoint.Side(name[i+1:]), Hit: hit})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read crash-point trace: %w", err)
	}
	return out, nil
}

// alertWindows is AlertWindows for one process's ordered points: each
// point once, sorted.
func alertWindows(hits []crashpoint.Point) []crashpoint.Point {
	in := map[crashpoint.Point]bool{}
	for i, h := range hits {
		if h.Step != alertPost || h.Side != crashpoint.Before {
			continue
		}
		from := i
		for j := i - 1; j >= 0; j-- {
			if durable.MatchString(hits[j].Step) && hits[j].Side == crashpoint.After {
				from = j
				break
			}
		}
		to := len(hits) - 1
		for k := i + 1; k < len(hits); k++ {
			if durable.MatchString(hits[k].Step) && hits[k].Side == crashpoint.Before {
				to = k
				break
			}
		}
		for _, p := range hits[from : to+1] {
			in[p] = true
		}
	}
	out := make([]crashpoint.Point, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
