package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/outboxchaos/outboxchaos/system/config"
)

// settingGroup is the pipeline settings one component reads.
type settingGroup struct {
	name  string
	flags []string
}

// settingGroups are the pipeline settings by the component that reads
// them, as system/config groups them.
var settingGroups = func() []settingGroup {
	var out []settingGroup
	for _, st := range config.Settings() {
		if len(out) == 0 || out[len(out)-1].name != st.Group {
			out = append(out, settingGroup{name: st.Group})
		}
		out[len(out)-1].flags = append(out[len(out)-1].flags, st.Name)
	}
	return out
}()

// commandGroups names the setting groups each pipeline command shows in
// its help; the others are one `help settings` away.
var commandGroups = map[string][]string{
	"migrate":   {config.GroupServices},
	"enqueue":   {config.GroupServices, config.GroupClock},
	"relay":     {config.GroupServices, config.GroupClock, config.GroupRelay},
	"worker":    {config.GroupServices, config.GroupClock, config.GroupWorker, config.GroupVendor},
	"cleanup":   {config.GroupServices, config.GroupClock, config.GroupCleanup},
	"reconcile": {config.GroupServices, config.GroupClock, config.GroupReconciler, config.GroupVendor},
	"vendor":    {config.GroupClock, config.GroupVendor},
}

// pipelineUsage is the help of a pipeline command: its own flags, then the
// settings of its component grouped, each with its environment variable.
func pipelineUsage(fs *flag.FlagSet, name string) {
	w := fs.Output()
	fmt.Fprintf(w, "usage: outboxchaos %s [flags]\n    %s\n", name, commands[name].summary)
	settings := map[string]bool{}
	for _, g := range settingGroups {
		for _, f := range g.flags {
			settings[f] = true
		}
	}
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !settings[f.Name] {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintf(w, "\n%s flags:\n", name)
		printFlags(w, own)
	}
	groups := commandGroups[name]
	if groups == nil { // demo: every component
		for _, g := range settingGroups {
			groups = append(groups, g.name)
		}
	}
	settingsHelp(w, func(g string) bool { return strings.Contains(","+strings.Join(groups, ",")+",", ","+g+",") }, fs)
	if commandGroups[name] != nil {
		fmt.Fprintln(w, "\nEvery other pipeline setting is accepted too: `outboxchaos help settings` lists them all.")
	}
}

// settingsHelp prints the pipeline settings by component: those of the
// groups keep accepts (nil: all), with defaults from fs (nil: a fresh
// flag set, defaults from the environment).
func settingsHelp(w io.Writer, keep func(string) bool, fs ...*flag.FlagSet) {
	var set *flag.FlagSet
	if len(fs) > 0 {
		set = fs[0]
	} else {
		var err error
		if set, _, err = flags("settings", io.Discard); err != nil {
			fmt.Fprintf(w, "outboxchaos: %v\n", err)
			return
		}
		fmt.Fprintln(w, "Pipeline settings by component: each a flag of every pipeline command and an environment variable.")
	}
	for _, g := range settingGroups {
		if keep != nil && !keep(g.name) {
			continue
		}
		fmt.Fprintf(w, "\n%s settings:\n", g.name)
		var fl []*flag.Flag
		for _, n := range g.flags {
			if f := set.Lookup(n); f != nil {
				fl = append(fl, f)
			}
		}
		printFlags(w, fl)
	}
}

// allFlags is the names of fs's flags.
func allFlags(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	return out
}

func printFlags(w io.Writer, fl []*flag.Flag) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range fl {
		def := ""
		if f.DefValue != "" && f.DefValue != "false" {
			def = " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "  --%s\t%s%s\n", f.Name, f.Usage, def)
	}
	_ = tw.Flush()
}

// subcommandFlags is a FlagSet for `outboxchaos <path>` whose help prints
// usage (the arguments) and summary above the flags.
func subcommandFlags(path, usage, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("outboxchaos "+path, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: outboxchaos %s %s\n    %s\n\nflags:\n", path, usage, summary)
		fs.PrintDefaults()
	}
	return fs
}

// runVersion prints the module version, the commit and the Go version.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("version", "", commands["version"].summary, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	version, commit, when := "(unknown)", "unknown (no VCS stamp: built outside a git checkout, or with -buildvcs=false)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = " " + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					commit += " (modified)"
				}
			}
		}
	}
	fmt.Fprintf(stdout, "outboxchaos %s\ncommit %s%s\n%s %s/%s\n", version, commit, when, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
