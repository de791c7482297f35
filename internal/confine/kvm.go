package confine

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// KVMCalls are what the sentry's allowlist adds on the KVM platform: the
// platform's ioctls (requests, platform/kvm's HostIoctls) on the
// descriptors of the VM it made before it confined itself, and of each
// vCPU it adds; the shared mapping of a vCPU's run structure is an mmap
// without PROT_EXEC, already allowed. (This package does not import the
// platform: it would link the network stack into the gofer.)
func KVMCalls(requests []uint64) Allowlist {
	return Allowlist{
		call(unix.SYS_IOCTL, "ioctl", "running guest code in the VM: new vCPUs, their registers and FPU state, KVM_RUN, guest memory slots",
			"the KVM requests the platform makes (platform/kvm/hostcalls.go)", oneOf(1, requests...)...),
	}
}

// With is l with extra's calls added: a call both list keeps l's rules
// and extra's, either of which lets it through.
func (l Allowlist) With(extra Allowlist) Allowlist {
	out := append(Allowlist(nil), l...)
	for _, e := range extra {
		i := out.index(e.Nr)
		if i < 0 {
			out = append(out, e)
			continue
		}
		c := out[i]
		if len(c.Rules) == 0 || len(e.Rules) == 0 {
			c.Rules, c.Args = nil, ""
		} else {
			c.Rules = append(append([]seccomp.Rule(nil), c.Rules...), e.Rules...)
			c.Args += "; " + e.Args
		}
		c.Why += "; " + e.Why
		out[i] = c
	}
	return out
}

func (l Allowlist) index(nr uint32) int {
	for i, c := range l {
		if c.Nr == nr {
			return i
		}
	}
	return -1
}
