package boot

import (
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/syscalls"
)

// seccompProgram compiles the config's linux.seccomp into the filter the
// container's process starts with, run by the sentry on its every call as
// runc's libseccomp filter is by Linux. Nil when the config sets none.
//
// The profile is read as runc reads it: SCMP_ACT_KILL is KILL_THREAD; an
// ERRNO or TRACE without errnoRet is EPERM; names the guest's architecture
// has no call of are skipped; several conditions on one argument make one
// rule each (any may hold), the others all must; and when the default
// action is not ALLOW, LOG or TRACE (nor ERRNO with ENOSYS), calls numbered above the highest the
// profile names get ENOSYS (runc's stub, so that a program can tell a call
// newer than the profile from a denied one). A call made with another
// architecture's convention than those listed is KILL_THREAD, libseccomp's
// default.
func seccompProgram(s *specs.LinuxSeccomp) ([]seccomp.Insn, error) {
	if s == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return &kernel.InitError{Msg: "linux.seccomp: " + fmt.Sprintf(format, args...)}
	}
	if s.ListenerPath != "" {
		return nil, bad("listenerPath %q: the sentry has no seccomp user-space notification", s.ListenerPath)
	}
	def, err := seccompAction(s.DefaultAction, s.DefaultErrnoRet)
	if err != nil {
		return nil, bad("defaultAction: %v", err)
	}
	for _, f := range s.Flags {
		switch f {
		case specs.LinuxSeccompFlagLog, specs.LinuxSeccompFlagSpecAllow, specs.LinuxSeccompFlagWaitKillableRecv:
		default:
			return nil, bad("unknown flag %q", f)
		}
	}
	f := seccomp.Filter{Rules: map[uint32][]seccomp.Rule{}, Default: def,
		BadArch: seccomp.ActKillThread, X32: seccomp.ActKillThread}
	// libseccomp adds the native architecture (x86-64) whatever the list.
	if slices.Contains(s.Architectures, specs.ArchX32) {
		// libseccomp gives x32 calls the rules by x32 number; the sentry
		// has no x32 calls, which the default then answers.
		f.X32 = def
	}
	last := uint32(0)
	for i, sc := range s.Syscalls {
		act, err := seccompAction(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, bad("syscalls[%d]: %v", i, err)
		}
		rules, err := seccompRules(sc.Args, act)
		if err != nil {
			return nil, bad("syscalls[%d]: %v", i, err)
		}
		for _, name := range sc.Names {
			nr, ok := syscalls.Number(name)
			if !ok {
				continue
			}
			last = max(last, nr)
			if act == def && len(sc.Args) == 0 {
				// libseccomp drops a rule that is the default.
				continue
			}
			f.Rules[nr] = mergeRules(f.Rules[nr], rules)
		}
	}
	if d := seccomp.Action(def); d != seccomp.ActAllow && d != seccomp.ActLog && d != seccomp.ActTrace &&
		!(d == seccomp.ActErrno && seccomp.RetData(def) == uint16(unix.ENOSYS)) {
		for nr := last + 1; nr < uint32(syscalls.Count()); nr++ {
			if _, ok := f.Rules[nr]; !ok {
				f.Rules[nr] = []seccomp.Rule{{Action: seccomp.Errno(unix.ENOSYS)}}
			}
		}
	}
	prog, err := f.Compile()
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(prog) > seccomp.MaxInsns {
		return nil, bad("the profile compiles to %d instructions, more than a filter may have (%d)", len(prog), seccomp.MaxInsns)
	}
	return prog, nil
}

// mergeRules adds rules to a call's: conditional rules are tried before
// an unconditional one, which answers whatever they do not.
func mergeRules(have, add []seccomp.Rule) []seccomp.Rule {
	out := append([]seccomp.Rule(nil), have...)
	for _, r := range add {
		if len(r.Conds) == 0 {
			out = slices.DeleteFunc(out, func(o seccomp.Rule) bool { return len(o.Conds) == 0 })
			out = append(out, r)
			continue
		}
		i := slices.IndexFunc(out, func(o seccomp.Rule) bool { return len(o.Conds) == 0 })
		if i < 0 {
			i = len(out)
		}
		out = slices.Insert(out, i, r)
	}
	return out
}

// seccompAction is the return value of an OCI seccomp action.
func seccompAction(a specs.LinuxSeccompAction, errnoRet *uint) (uint32, error) {
	errno := uint32(unix.EPERM)
	if errnoRet != nil {
		if *errnoRet > 0xffff {
			return 0, fmt.Errorf("errnoRet %d is out of range", *errnoRet)
		}
		errno = uint32(*errnoRet)
	}
	switch a {
	case specs.ActKill, specs.ActKillThread:
		return seccomp.ActKillThread, nil
	case specs.ActKillProcess:
		return seccomp.ActKillProcess, nil
	case specs.ActTrap:
		return seccomp.ActTrap, nil
	case specs.ActErrno:
		return seccomp.ActErrno | errno, nil
	case specs.ActTrace:
		return seccomp.ActTrace | errno, nil
	case specs.ActAllow:
		return seccomp.ActAllow, nil
	case specs.ActLog:
		return seccomp.ActLog, nil
	case specs.ActNotify:
		return 0, fmt.Errorf("SCMP_ACT_NOTIFY: the sentry has no seccomp user-space notification")
	}
	return 0, fmt.Errorf("unknown action %q", a)
}

// seccompOps are the OCI comparison operators.
var seccompOps = map[specs.LinuxSeccompOperator]seccomp.Op{
	specs.OpEqualTo: seccomp.OpEQ, specs.OpNotEqual: seccomp.OpNE, specs.OpLessThan: seccomp.OpLT,
	specs.OpLessEqual: seccomp.OpLE, specs.OpGreaterEqual: seccomp.OpGE, specs.OpGreaterThan: seccomp.OpGT,
	specs.OpMaskedEqual: seccomp.OpMaskedEQ,
}

// seccompRules are the rules of one profile entry: one with every
// condition, or, when an argument has several, one per condition (runc
// adds them so, and libseccomp takes any of them).
func seccompRules(args []specs.LinuxSeccompArg, act uint32) ([]seccomp.Rule, error) {
	conds := make([]seccomp.Cond, len(args))
	perArg := map[uint]int{}
	for i, a := range args {
		if a.Index > 5 {
			return nil, fmt.Errorf("argument index %d: a call has 6", a.Index)
		}
		op, ok := seccompOps[a.Op]
		if !ok {
			return nil, fmt.Errorf("unknown operator %q", a.Op)
		}
		c := seccomp.Cond{Arg: int(a.Index), Op: op, Value: a.Value}
		if op == seccomp.OpMaskedEQ {
			c.Mask, c.Value = a.Value, a.ValueTwo
		}
		conds[i] = c
		perArg[a.Index]++
	}
	for _, n := range perArg {
		if n > 1 {
			rules := make([]seccomp.Rule, len(conds))
			for i, c := range conds {
				rules[i] = seccomp.Rule{Conds: []seccomp.Cond{c}, Action: act}
			}
			return rules, nil
		}
	}
	return []seccomp.Rule{{Conds: conds, Action: act}}, nil
}
