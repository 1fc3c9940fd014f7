package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// command is one of nfrouter's commands besides the agent: it parses its own
// args and returns the exit status.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands are chosen by the first argument when it is not a flag
// ("nfrouter cleanup --kube-router-leftovers"); without one nfrouter runs
// the agent. Add a command here.
var commands = map[string]command{
	"cleanup": {summary: "remove what nfrouter (and, asked, kube-router) programmed on this node", run: runCleanup},
	"explain": {summary: "whether the firewall allows a connection, which policies decide, its path through each node's chains", run: runExplain},
	"denials": {summary: "print the packets the firewall drops, with pod names and the policies isolating them", run: runDenials},
}

// commandUsage lists the commands for --help.
func commandUsage() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("Commands (nfrouter COMMAND --help for its flags):\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	return b.String()
}

// newCommandFlags is the flag set of command name: errors go to the caller,
// flags are listed in the order they are defined.
func newCommandFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("nfrouter "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	return fs
}

// parseCommandFlags parses a command's args into fs: --help becomes a
// helpRequested with usage and the flags, a stray argument an error.
func parseCommandFlags(fs *pflag.FlagSet, usage string, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return &helpRequested{usage: usage + fs.FlagUsages()}
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// flagsDone ends command name when parsing its flags (err) asked for help
// (the usage on stdout, exit 0) or failed (the error on stderr, exit 2);
// done is false when the command goes on.
func flagsDone(name string, err error, stdout, stderr io.Writer) (code int, done bool) {
	var help *helpRequested
	if errors.As(err, &help) {
		fmt.Fprint(stdout, help.usage)
		return exitOK, true
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see --help)\n", name, err)
		return exitUsage, true
	}
	return 0, false
}

// toolFlagsError adds to errs what is wrong with the flags every command
// that reads the model and prints shares (output, log format, model source)
// and returns them all as one error, nil when there are none.
func toolFlagsError(errs []string, output string, log toolLog, source *sourceOptions) error {
	errs = append(errs, checkOutput(output)...)
	errs = append(errs, checkLogFormat(log.format)...)
	errs = append(errs, source.validate()...)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func checkOutput(o string) []string {
	if o != "table" && o != "json" {
		return []string{fmt.Sprintf("--output must be table or json, not %q", o)}
	}
	return nil
}

func checkLogFormat(f string) []string {
	switch f {
	case "", "text", "json":
		return nil
	}
	return []string{fmt.Sprintf("--log-format must be text or json, not %q", f)}
}

// toolLog is the log flags of the commands whose output is on stdout.
type toolLog struct {
	format    string
	verbosity int
}

func (l *toolLog) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "", "Log format, text or json; text on a terminal, json otherwise.")
	fs.IntVarP(&l.verbosity, "v", "v", 0, "Log verbosity: 0 logs warnings and errors, 1 adds what was loaded, 2 and more per-object detail.")
}

// logger logs to w one level less than the agent: a tool's output is on
// stdout.
func (l toolLog) logger(w io.Writer) *slog.Logger { return newLogger(w, l.format, l.verbosity-1) }
