package systrap

// HostPID is the host pid of the stub process that runs the address
// space's guest code: what `moat ps` reports for the guest process, so
// that tools listing a container's host processes (docker top) find one
// per guest process.
func (as *addressSpace) HostPID() int { return as.stub.pid }
