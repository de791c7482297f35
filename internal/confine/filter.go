package confine

import (
	"fmt"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// Call is one host system call an allowlist lets through: Rules restrict
// its arguments (none: any), Why says what needs it, for docs/security.md.
type Call struct {
	Nr    uint32
	Name  string
	Rules []seccomp.Rule
	Args  string // what Rules allow, in words ("" when any arguments are)
	Why   string
}

// Allowlist is the host calls a process may make once confined.
type Allowlist []Call

// Mode is what a call outside the allowlist gets.
type Mode int

const (
	// Kill ends the process (SECCOMP_RET_KILL_PROCESS): the default.
	Kill Mode = iota
	// Log lets the call through and has the host kernel log it
	// (SECCOMP_RET_LOG): the audit mode, for finding what a workload
	// needs. Never the default.
	Log
)

// ParseMode reads a mode by name ("kill", "log").
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "kill":
		return Kill, nil
	case "log":
		return Log, nil
	}
	return Kill, fmt.Errorf("unknown host call mode %q (want kill or log)", s)
}

func (m Mode) String() string {
	if m == Log {
		return "log"
	}
	return "kill"
}

// Filter is the seccomp filter of the allowlist in mode m.
func (l Allowlist) Filter(m Mode) seccomp.Filter {
	deny := uint32(seccomp.ActKillProcess)
	if m == Log {
		deny = seccomp.ActLog
	}
	f := seccomp.Filter{Rules: make(map[uint32][]seccomp.Rule), Default: deny, BadArch: deny, X32: deny}
	for _, c := range l {
		rules := c.Rules
		if len(rules) == 0 {
			rules = []seccomp.Rule{seccomp.Allow()}
		}
		f.Rules[c.Nr] = rules
	}
	return f
}

// Install compiles the allowlist's filter for mode m and installs it on
// every thread of the process. The process must have set no_new_privs
// (DropPrivileges does).
func (l Allowlist) Install(m Mode) error {
	f := l.Filter(m)
	prog, err := f.Compile()
	if err != nil {
		return err
	}
	if err := seccomp.Install(prog, 0); err != nil {
		return fmt.Errorf("confine: install the seccomp filter: %w", err)
	}
	return nil
}

// Names lists the allowlist's calls, sorted.
func (l Allowlist) Names() []string {
	names := make([]string, len(l))
	for i, c := range l {
		names[i] = c.Name
	}
	sort.Strings(names)
	return names
}

// call builds a Call of a number whose name unix spells SYS_NAME.
func call(nr uintptr, name, why string, args string, rules ...seccomp.Rule) Call {
	return Call{Nr: uint32(nr), Name: name, Rules: rules, Args: args, Why: why}
}

// oneOf allows the call when argument arg is one of values.
func oneOf(arg int, values ...uint64) []seccomp.Rule {
	rules := make([]seccomp.Rule, len(values))
	for i, v := range values {
		rules[i] = seccomp.Allow(seccomp.Eq(arg, v))
	}
	return rules
}

// noExec allows a mapping or protection change whose prot (argument arg)
// has no PROT_EXEC: the process never makes new code.
func noExec(arg int) seccomp.Rule {
	return seccomp.Allow(seccomp.MaskedEq(arg, unix.PROT_EXEC, 0))
}
