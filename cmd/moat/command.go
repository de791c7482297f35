package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// command is one user-facing subcommand.
type command struct {
	name    string
	args    string // positional arguments for the usage line, e.g. "<container-id> [signal]"
	minArgs int
	maxArgs int // -1: no bound
	// argsEndOptions: the first positional argument ends the options, so
	// that what follows is the guest's command line with its own flags
	// (exec's `<container-id> sh -c ...`), as runc parses exec.
	argsEndOptions bool
	// failStatus is the exit status of a failure (runc's exec exits 255);
	// 0 means 1.
	failStatus int
	// usageStatus is the exit status of a wrong flag or argument; 0 means
	// 1, as runc's for every command.
	usageStatus int
	summary     string // one line in `moat help`
	detail      string // paragraphs in `moat help <name>`
	// setup declares the command's options and returns what runs it once
	// they are parsed.
	setup func(o *options) func(g *globalOptions, args []string) error
}

// commands in the order `moat help` lists them.
var commands = []*command{
	specCommand, createCommand, startCommand, runCommand, stateCommand,
	killCommand, deleteCommand, listCommand, execCommand, psCommand,
	pauseCommand, resumeCommand, eventsCommand, updateCommand, featuresCommand,
	checkpointCommand, restoreCommand, serveCommand, localCommand,
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// options wraps a flag.FlagSet to give each option several names (--bundle
// and -b) and to keep the help text that the flag package would print once
// per name.
type options struct {
	fs   *flag.FlagSet
	help []optionHelp
}

type optionHelp struct {
	names string // as shown: "--bundle, -b DIR"
	usage string
}

func newOptions(name string) *options {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by the caller
	return &options{fs: fs}
}

// String declares a string option; names is a comma-separated list, the
// first being the one the help shows first.
func (o *options) String(p *string, names, metavar, value, usage string) {
	for _, n := range strings.Split(names, ",") {
		o.fs.StringVar(p, n, value, usage)
	}
	if value != "" {
		usage += fmt.Sprintf(" (default %q)", value)
	}
	o.help = append(o.help, optionHelp{dashed(names) + " " + metavar, usage})
}

// Strings declares an option that may be given many times, each value
// appended (runc's --env, --cap).
func (o *options) Strings(p *[]string, names, metavar, usage string) {
	for _, n := range strings.Split(names, ",") {
		o.fs.Func(n, usage, func(v string) error {
			*p = append(*p, v)
			return nil
		})
	}
	o.help = append(o.help, optionHelp{dashed(names) + " " + metavar, usage + " (may be repeated)"})
}

// Int declares an integer option.
func (o *options) Int(p *int, names, metavar string, value int, usage string) {
	for _, n := range strings.Split(names, ",") {
		o.fs.IntVar(p, n, value, usage)
	}
	o.help = append(o.help, optionHelp{dashed(names) + " " + metavar, usage})
}

// isSet reports whether the option named name was given.
func (o *options) isSet(name string) bool {
	set := false
	o.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Bool declares a boolean option.
func (o *options) Bool(p *bool, names, usage string) {
	for _, n := range strings.Split(names, ",") {
		o.fs.BoolVar(p, n, false, usage)
	}
	o.help = append(o.help, optionHelp{dashed(names), usage})
}

func dashed(names string) string {
	var out []string
	for _, n := range strings.Split(names, ",") {
		if len(n) == 1 {
			out = append(out, "-"+n)
		} else {
			out = append(out, "--"+n)
		}
	}
	return strings.Join(out, ", ")
}

// parse reads options anywhere among the arguments, as runc accepts both
// `create --bundle B ID` and `create ID --bundle B`; after "--" everything
// is positional.
func (o *options) parse(args []string, argsEndOptions bool) ([]string, error) {
	var positional []string
	for {
		if err := o.fs.Parse(args); err != nil {
			return nil, err
		}
		rest := o.fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		if argsEndOptions {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func (o *options) writeHelp(w io.Writer, title string) {
	if len(o.help) == 0 {
		return
	}
	width := 0
	for _, h := range o.help {
		width = max(width, len(h.names))
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, h := range o.help {
		fmt.Fprintf(w, "  %-*s  %s\n", width, h.names, h.usage)
	}
}

func (c *command) writeHelp(w io.Writer, o *options) {
	fmt.Fprintf(w, "Usage: moat [global options] %s [options] %s\n\n%s\n", c.name, c.args, c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.detail))
	}
	o.writeHelp(w, "Options")
}

// errShowedHelp tells the caller that parsing stopped because help was
// asked for and printed.
var errShowedHelp = errors.New("help shown")

// prepare parses a command's arguments and returns what runs it.
func (c *command) prepare(args []string, stdout io.Writer) (func(*globalOptions) error, error) {
	o := newOptions(c.name)
	run := c.setup(o)
	positional, err := o.parse(args, c.argsEndOptions)
	if errors.Is(err, flag.ErrHelp) {
		c.writeHelp(stdout, o)
		return nil, errShowedHelp
	}
	if err != nil {
		return nil, fmt.Errorf("%v (see moat %s --help)", err, c.name)
	}
	if n := len(positional); n < c.minArgs || (c.maxArgs >= 0 && n > c.maxArgs) {
		return nil, fmt.Errorf("%s, got %d (see moat %s --help)", c.wantArgs(), n, c.name)
	}
	return func(g *globalOptions) error { return run(g, positional) }, nil
}

func (c *command) wantArgs() string {
	switch {
	case c.maxArgs == 0:
		return "takes no arguments"
	case c.maxArgs < 0:
		return fmt.Sprintf("takes at least %d argument(s) %s", c.minArgs, c.args)
	case c.minArgs == c.maxArgs:
		return fmt.Sprintf("takes exactly %d argument(s) %s", c.minArgs, c.args)
	default:
		return fmt.Sprintf("takes %d to %d arguments %s", c.minArgs, c.maxArgs, c.args)
	}
}
