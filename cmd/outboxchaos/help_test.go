package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/config"
)

// commandPaths is every command and sub-command, as its words.
func commandPaths() [][]string {
	var paths [][]string
	for name, c := range commands {
		if c.run != nil {
			paths = append(paths, []string{name})
		}
	}
	for _, sub := range []string{"list", "show", "run", "check"} {
		paths = append(paths, []string{"scenario", sub})
	}
	return append(paths, []string{"simulate", "capacity"})
}

// Every command and sub-command answers -h, --help and `help X` on stdout
// with exit 0, in the one format (a usage line first, then what it does
// and its flags: never the flag package's own dump), and none of them
// takes -h for a name or a file.
func TestHelpEverywhere_Exit0(t *testing.T) {
	t.Parallel()
	for _, p := range commandPaths() {
		for _, args := range [][]string{
			append(append([]string(nil), p...), "-h"),
			append(append([]string(nil), p...), "--help"),
			append([]string{"help"}, p...),
		} {
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 || !strings.HasPrefix(stdout, "usage: outboxchaos "+strings.Join(p, " ")) || strings.Contains(stdout, "Usage of") {
				t.Errorf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
			}
		}
	}
}

func TestScenarioHelpListsSubcommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"scenario", "-h"}, {"scenario", "--help"}, {"help", "scenario"}, {"scenario", "help"}} {
		code, stdout, _ := runCLI(t, args...)
		for _, want := range []string{"list", "show NAME", "run NAME…", "check RUN.json"} {
			if code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("%q: exit %d, no %q in\n%s", args, code, want, stdout)
			}
		}
	}
}

// The pipeline commands' help groups the settings by component, each group
// once, and says where the others are.
func TestPipelineHelpGroupsSettings(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "worker", "-h")
	for _, want := range []string{"services settings:", "worker settings:", "vendor settings:", "--delivery-limit", "help settings"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("worker -h: exit %d, no %q in\n%s", code, want, stdout)
		}
	}
	if strings.Contains(stdout, "relay settings:") || strings.Contains(stdout, "--lease") {
		t.Errorf("worker -h shows the relay's settings:\n%s", stdout)
	}
	code, stdout, _ = runCLI(t, "help", "settings")
	for _, g := range settingGroups {
		if code != 0 || strings.Count(stdout, "\n"+g.name+" settings:") != 1 {
			t.Errorf("help settings: exit %d, group %q not once in\n%s", code, g.name, stdout)
		}
	}
}

// Every pipeline setting belongs to exactly one group, a known one (the
// configuration names each setting's group beside it), and the grouped
// help cannot drop one.
func TestEverySettingHasAGroup(t *testing.T) {
	t.Parallel()
	fs, _, err := flags("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	group := map[string]string{}
	for _, g := range settingGroups {
		for _, f := range g.flags {
			if prev, ok := group[f]; ok {
				t.Errorf("setting %s in groups %s and %s", f, prev, g.name)
			}
			group[f] = g.name
			if fs.Lookup(f) == nil {
				t.Errorf("group %s names %s, which is no setting", g.name, f)
			}
		}
	}
	for _, f := range allFlags(fs) {
		if _, ok := group[f]; !ok {
			t.Errorf("setting --%s has no group", f)
		}
	}
	for _, st := range config.Settings() {
		if !slices.Contains(config.Groups, st.Group) {
			t.Errorf("setting --%s is in group %q, which is no group", st.Name, st.Group)
		}
	}
	for cmd, gs := range commandGroups {
		for _, g := range gs {
			found := false
			for _, sg := range settingGroups {
				found = found || sg.name == g
			}
			if !found {
				t.Errorf("command %s shows unknown group %q", cmd, g)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "outboxchaos ") || !strings.Contains(stdout, "commit ") || !strings.Contains(stdout, "go1.") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}
