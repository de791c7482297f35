package kvm

import "os"

// HostPID is the host pid of the process that runs the address space's
// guest code, what `moat ps` reports for the guest process: on this
// platform every guest thread runs on a thread of the sentry.
func (as *addressSpace) HostPID() int { return os.Getpid() }
