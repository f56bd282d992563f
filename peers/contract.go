package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DescribeEnvVar asks a relay given as a command line for its
// declaration: run with DescribeEnvVar=1, it prints one JSON object
// (Declaration) on stdout and exits 0 (docs/relay-contract.md).
const DescribeEnvVar = "OUTBOXCHAOS_RELAY_DESCRIBE"

// Declaration is what a command-line relay says of itself.
type Declaration struct {
	Features
	Deadlines []Deadline `json:"deadlines"`
	// Status is its status query when it keeps an outbox of its own
	// (filled by a trigger on notification_outbox, which Migrate creates);
	// "" when it marks notification_outbox itself.
	Status string `json:"status"`
	// Migrate, if set, is run once (a shell-free command line, split on
	// spaces) after our schema exists, before any relay starts.
	Migrate  string    `json:"migrate"`
	Settings []Setting `json:"settings"`
}

// Setting is one declared setting.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// Describe runs command with DescribeEnvVar=1 and returns the peer it
// declares, called name. A relay that prints nothing declares nothing: no
// kill-points, no broker faults, no deadlines.
func Describe(ctx context.Context, name string, command []string) (Peer, error) {
	if len(command) == 0 {
		return Peer{}, fmt.Errorf("relay %s: empty command", name)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), DescribeEnvVar+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Peer{}, fmt.Errorf("describe relay %s (%s): %w: %s", name, strings.Join(command, " "), err, strings.TrimSpace(stderr.String()))
	}
	var d Declaration
	if s := bytes.TrimSpace(out); len(s) > 0 {
		if err := json.Unmarshal(s, &d); err != nil {
			return Peer{}, fmt.Errorf("describe relay %s: its declaration is not the JSON object the contract asks for: %w", name, err)
		}
	}
	for _, dl := range d.Deadlines {
		if err := dl.validate(); err != nil {
			return Peer{}, fmt.Errorf("describe relay %s: %w", name, err)
		}
	}
	p := Peer{Name: name, Command: command, Status: d.Status, Features: d.Features, Deadlines: d.Deadlines}
	if d.Migrate != "" {
		p.Migrate = strings.Fields(d.Migrate)
	}
	p.Settings = append(p.Settings, "command="+strings.Join(command, " ")+"\tthe process contract (docs/relay-contract.md)")
	for _, s := range d.Settings {
		p.Settings = append(p.Settings, s.Name+"="+s.Value+"\t"+s.Why)
	}
	return p, nil
}

// validate says why a declared deadline cannot be drawn across: a deadline
// needs a name, and a value that is a positive Go duration as the run
// keeps it ("600ms", "1.5s"), "none", or the name of the variable the run
// sets it from (OUTBOXCHAOS_CONFIRM_TIMEOUT).
func (dl Deadline) validate() error {
	if strings.TrimSpace(dl.Name) == "" {
		return fmt.Errorf("a deadline without a name (value %q)", dl.Value)
	}
	if dl.Value == "none" || strings.HasPrefix(dl.Value, "OUTBOXCHAOS_") {
		return nil
	}
	if d, err := time.ParseDuration(dl.Value); err != nil || d <= 0 {
		return fmt.Errorf("deadline %s: value %q is not a positive Go duration (600ms, 1.5s), none, or the OUTBOXCHAOS_ variable it is set from", dl.Name, dl.Value)
	}
	return nil
}
