package systrap

// The stub region: fixed addresses, identical in every stub process, above
// every address a guest may map. Everything the stub needs lives here; the
// rest of a stub's address space belongs to the guest.
//
// The region's pages come from the control file, a memfd shared by the sentry
// and all stubs of a sandbox. The sentry maps all of it read-write; a stub maps
// the shared code and parameters once, its own request and result pages, and
// one slot per guest thread.
//
// These constants are the single source of truth: the stub's assembly gets
// them as -D definitions when it is built (see stub_build_test.go).
const (
	// stubBase is 4 GiB aligned so that the seccomp filter can test the upper
	// half of the instruction pointer against one value.
	stubBase = 0x7fc0_0000_0000

	codeVA    = stubBase          // R-X: the stub's machine code
	codeSize  = 0x4000            // room reserved for it
	paramsVA  = stubBase + 0x4000 // R: parameters shared by every stub
	paramsOff = 0x4000            // offset of the parameters in the control file
	paramSize = 0x4000
	requestVA = stubBase + 0x10000 // R: the sentry's requests to this stub's syscall thread
	resultVA  = stubBase + 0x11000 // RW: the syscall thread's answers
	slotsVA   = stubBase + 0x100000

	// A slot is one guest thread's state page and signal stack. Slots are
	// aligned to their size so the signal handler finds its state page by
	// masking its stack pointer.
	slotSize   = 0x10000
	maxThreads = 4096
	stubEnd    = slotsVA + maxThreads*slotSize

	// The guest may map [0, MaxGuestAddr). The gap up to stubBase guarantees
	// that no guest-sized mapping request can reach the stub region.
	MaxGuestAddr = 0x7f00_0000_0000

	// taskEnd is the end of the x86-64 user address space (4-level paging).
	taskEnd = 0x7fff_ffff_f000

	// unitSize is the allocation unit of the control file: one stub's
	// request and result pages, or one thread slot.
	unitSize = slotSize
)

// Offsets in the parameters page.
const (
	parCtlFD       = 0   // u32: the control file's fd number in stubs
	parMemFD       = 4   // u32: the memory file's fd number in stubs
	parSysFprog    = 8   // struct sock_fprog of the syscall thread's filter
	parGuestFprog  = 24  // struct sock_fprog of guest threads' filter
	parGuestMask   = 40  // u64: host signal mask of guest threads
	parPPID        = 48  // u32: the sentry's pid, for the parent-death check
	parHandlerSpin = 52  // u32: spin iterations before a handler sleeps
	parSysSpin     = 56  // u32: spin iterations before the syscall thread sleeps
	parGuestBusy   = 60  // u32: guest threads keep every CPU busy: handlers spin without yielding (busy.go)
	parSigaction   = 64  // struct kernel_sigaction used for every handled signal
	parNumSignals  = 96  // u32
	parSignals     = 100 // [16]u32: the signals the handler serves
	parDflAction   = 176 // a zeroed struct kernel_sigaction: SIG_DFL
	parYieldSlow   = 208 // u64: TSC ticks after which a sched_yield counts as slow (futex.go)
	parCPUCheck    = 216 // u64: TSC ticks of guest code after which the handler reads the thread's CPU clock
	parKeepFDs     = 224 // [numKeepFDs]u32, sorted: the fds a new stub keeps (control, memory, host-file socket)
	parSysFilter   = 256 // sock_filter array of the syscall thread's filter
	parGuestFilter = 2048
)

// Offsets in a thread slot's state page.
const (
	tsState          = 0   // u32 futex word: threadTrapped or threadResume
	tsStubSleeping   = 4   // u32: the handler is in (or entering) FUTEX_WAIT
	tsSentrySleeping = 8   // u32: the sentry is in (or entering) FUTEX_WAIT
	tsSigno          = 12  // u32: the signal that trapped the thread
	tsSiginfo        = 16  // u64: stub address of the siginfo
	tsUcontext       = 24  // u64: stub address of the ucontext
	tsFSBase         = 32  // u64
	tsGSBase         = 40  // u64
	tsFSGSDirty      = 48  // u32: the sentry changed FSBase or GSBase
	tsTID            = 52  // u32: the host thread's tid; the kernel clears it when the thread is gone
	tsPark           = 56  // u32: the sentry will not resume the thread soon: sleep instead of spinning
	tsAltStack       = 64  // stack_t for sigaltstack, filled by the sentry
	tsTrapTSC        = 88  // u64: the TSC when the handler was entered
	tsResumeTSC      = 96  // u64: the TSC when the handler saw threadResume
	tsCPUTime        = 104 // struct timespec: the thread's CPU clock at the trap; tv_nsec -1 if not read
	tsEnd            = 120
	altStackOff      = 0x1000
)

// Thread states. Only the stub sets threadTrapped, only the sentry sets
// threadResume; the reaper sets threadDead when the stub process is gone.
const (
	threadTrapped = 1
	threadResume  = 2
	threadDead    = 3
)

// Offsets in the request page (read-only to the stub) and result page.
const (
	reqSeq  = 0  // u32 futex word: bumped by the sentry for each request
	reqNOps = 4  // u32
	reqIdle = 8  // u32: when idle, the syscall thread sleeps at once instead of spinning (request.go)
	reqOps  = 16 // [maxOps]op, opSize bytes each

	opKind = 0 // u32: opSyscall, opCloneThread or opCloneStub
	opNr   = 8 // u64
	opArgs = 16
	opSize = 64

	maxOps = (4096 - reqOps) / opSize

	resAck            = 0 // u32 futex word: the last request seq done
	resSentrySleeping = 4 // u32
	resStubSleeping   = 8 // u32
	resNDone          = 12
	resResults        = 16 // [maxOps]i64

	// Where the syscall thread receives host files' descriptors (hostfds.go):
	// a struct msghdr, its iovec and byte, and the control buffer.
	resMsghdr  = 1024
	resIovec   = 1088
	resMsgByte = 1104
	resCmsg    = 1152
	resCmsgEnd = 4096
)

// numKeepFDs is how many fds a new stub keeps.
const numKeepFDs = 3

// Request kinds.
const (
	opSyscall     = 0 // nr and six arguments, executed as they are
	opCloneThread = 1 // clone(args[0] flags, args[1] stack); the child starts a guest thread in slot args[5]
	opCloneStub   = 2 // clone(args[0] flags); the child becomes a fresh stub using request pages at control-file offset args[5]
)
