package kvm

// The guest's physical and virtual layout, identical in every VM.
//
// Guest-physical memory is the sentry's memory file at guest-physical
// address = file offset, so a guest page table entry names the file page
// itself, followed by the platform's own region (page tables, descriptor
// tables, the stub's code and stacks) at tablesGPA. Both are registered with
// KVM in chunks as they come into use: with shadow paging, KVM's metadata
// for a memory slot grows with the slot's size, sparse or not.
//
// Guest-virtual memory: the guest's own mappings below MaxUserAddress, and
// the stub region at the top of the address space (the last PML4 entry,
// shared by every address space), mapped for supervisor mode only.
const (
	pageSize  = 4096
	pageShift = 12

	// memChunk is the unit in which the memory file is registered.
	memChunk = 1 << 30
	// tablesGPA is where the platform region starts; the memory file
	// (sentry/memfile) never reaches it.
	tablesGPA = 1 << 39
	// tablesMax is the platform region's sparse size, tablesChunk the unit
	// in which it is registered.
	tablesMax   = 1 << 32
	tablesChunk = 64 << 20

	// MaxUserAddress is the end of what a guest may map: the same as
	// systrap's, so that programs see one address space layout on both.
	MaxUserAddress = 0x7f00_0000_0000

	// stubBase is the first address of the last PML4 entry's 512 GiB.
	stubBase   = 0xffff_ff80_0000_0000
	stubCodeVA = stubBase          // the stub's code (read, execute)
	idtVA      = stubBase + 0x1000 // the interrupt descriptor table (read)
	vcpuAreaVA = stubBase + 0x200000

	// Each vCPU has a page of its own in the stub region: its GDT, its
	// TSS (whose RSP0 is the top of the page) and the stack the CPU saves
	// an exception frame on when a fault takes it out of user mode.
	vcpuGDTOff = 0
	vcpuTSSOff = 0x80
	maxVCPUs   = 1024
)

// Segment selectors. The user ones are Linux's (__USER_CS, __USER_DS and
// __USER32_CS): the guest's signal frames and ptrace-like views name them.
const (
	kernelCS = 0x10
	kernelDS = 0x18
	user32CS = 0x23
	userDS   = 0x2b
	userCS   = 0x33
	tssSel   = 0x40
	gdtLimit = 0x4f
)

// Control register, EFER and RFLAGS bits the vCPU runs with.
const (
	cr0PE = 1 << 0
	cr0MP = 1 << 1
	cr0ET = 1 << 4
	cr0NE = 1 << 5
	cr0WP = 1 << 16
	cr0AM = 1 << 18
	cr0PG = 1 << 31

	cr4PAE        = 1 << 5
	cr4PGE        = 1 << 7
	cr4OSFXSR     = 1 << 9
	cr4OSXMMEXCPT = 1 << 10
	cr4FSGSBASE   = 1 << 16
	cr4OSXSAVE    = 1 << 18

	eferSCE = 1 << 0
	eferLME = 1 << 8
	eferLMA = 1 << 10
	eferNXE = 1 << 11

	// cr3PWT is a CR3 flag (write-through for PML4 accesses) that names no
	// table: toggling it makes KVM see a new CR3, and a new CR3 flushes
	// the vCPU's TLB.
	cr3PWT = 1 << 3

	rflagsIF = 1 << 9
	// syscallMask is cleared in RFLAGS on a syscall (MSR_SYSCALL_MASK):
	// TF, IF, DF, IOPL, NT and AC, as Linux does.
	syscallMask = 0x47700
)

// MSRs set on every vCPU.
const (
	msrSTAR  = 0xc0000081
	msrLSTAR = 0xc0000082
	msrCSTAR = 0xc0000083
	msrFMASK = 0xc0000084
	msrTSC   = 0x10
)
