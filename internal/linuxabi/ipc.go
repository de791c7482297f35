package linuxabi

// System V IPC commands, flags and limits that golang.org/x/sys/unix
// lacks: include/uapi/linux/ipc.h, shm.h, sem.h and msg.h.
const (
	IPC_INFO = 3

	SHM_HUGETLB  = 0o4000
	SHM_REMAP    = 0o40000
	SHM_EXEC     = 0o100000
	SHM_LOCK     = 11
	SHM_UNLOCK   = 12
	SHM_STAT     = 13
	SHM_INFO     = 14
	SHM_STAT_ANY = 15

	SEM_UNDO     = 0x1000
	GETPID       = 11
	GETVAL       = 12
	GETALL       = 13
	GETNCNT      = 14
	GETZCNT      = 15
	SETVAL       = 16
	SETALL       = 17
	SEM_STAT     = 18
	SEM_INFO     = 19
	SEM_STAT_ANY = 20

	MSG_STAT     = 11
	MSG_INFO     = 12
	MSG_STAT_ANY = 13
	MSG_NOERROR  = 0o10000
	MSG_EXCEPT   = 0o20000
	MSG_COPY     = 0o40000
)

// System V limits: Linux's defaults for a new IPC namespace, and the
// constants its *_INFO commands report.
const (
	SHMMAX = 1<<64 - 1 - 1<<24 // ULONG_MAX - 2^24
	SHMALL = SHMMAX
	SHMMIN = 1
	SHMMNI = 4096
	SHMSEG = SHMMNI

	SEMMNI = 32000
	SEMMSL = 32000
	SEMMNS = SEMMNI * SEMMSL
	SEMOPM = 500
	SEMVMX = 32767
	SEMAEM = SEMVMX
	SEMUME = SEMOPM
	SEMMNU = SEMMNS
	SEMMAP = SEMMNS
	SEMUSZ = 20

	MSGMNI  = 32000
	MSGMAX  = 8192
	MSGMNB  = 16384
	MSGPOOL = MSGMNI * MSGMNB / 1024
	MSGTQL  = MSGMNB
	MSGMAP  = MSGMNB
	MSGSSZ  = 16
	MSGSEG  = 0xffff // (MSGPOOL * 1024) / MSGSSZ, capped to fit its unsigned short
)
