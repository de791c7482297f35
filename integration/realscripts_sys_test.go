package integration

// The scripts of the real-program checks of processes, namespaces and
// System V IPC (issue 14's acceptance): ipcs, nice, bubblewrap, and the
// os, signal, resource and multiprocessing calls python programs make.

// ipcsAfterObjects makes a segment, a semaphore set and a queue in one
// program; ipcs, run after it has exited, lists them.
const ipcsAfterObjects = `python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000
assert libc.shmget(0x6d6f6174, 4096, IPC_CREAT | 0o640) >= 0
assert libc.semget(0x6d6f6174, 3, IPC_CREAT | 0o600) >= 0
assert libc.msgget(0x6d6f6174, IPC_CREAT | 0o666) >= 0
' && ipcs`

const ipcsAfterObjectsOut = `
------ Message Queues --------
key        msqid      owner      perms      used-bytes   messages    
0x6d6f6174 0          root       666        0            0           

------ Shared Memory Segments --------
key        shmid      owner      perms      bytes      nattch     status      
0x6d6f6174 0          root       640        4096       0                       

------ Semaphore Arrays --------
key        semid      owner      perms      nsems     
0x6d6f6174 0          root       600        3         

`

// pythonSched asks for the CPUs, pins itself to one, and raises its nice
// value.
const pythonSched = `
import os
cpus = os.sched_getaffinity(0)
print(len(cpus) == os.cpu_count(), 0 in cpus)
os.sched_setaffinity(0, {0})
print(os.sched_getaffinity(0))
print(os.nice(0), os.nice(5), os.getpriority(os.PRIO_PROCESS, 0))
print(os.sched_getscheduler(0) == os.SCHED_OTHER, os.sched_get_priority_max(os.SCHED_FIFO))
`

// pythonSetitimer runs an interval timer three times, then one of CPU
// time.
const pythonSetitimer = `
import signal
n = 0
def tick(signum, frame):
    global n
    n += 1
    if n == 3:
        signal.setitimer(signal.ITIMER_REAL, 0)
signal.signal(signal.SIGALRM, tick)
signal.setitimer(signal.ITIMER_REAL, 0.02, 0.02)
while n < 3:
    signal.pause()
print(n, signal.getitimer(signal.ITIMER_REAL))
fired = []
signal.signal(signal.SIGVTALRM, lambda s, f: fired.append(s))
signal.setitimer(signal.ITIMER_VIRTUAL, 0.05)
while not fired:
    pass
print(fired == [signal.SIGVTALRM])
`

// pythonSharedMemory shares a POSIX shared memory block (in /dev/shm)
// with a forked process.
const pythonSharedMemory = `
from multiprocessing import shared_memory, Process
def child(name):
    s = shared_memory.SharedMemory(name=name)
    s.buf[0] = 42
    s.close()
shm = shared_memory.SharedMemory(create=True, size=16)
p = Process(target=child, args=(shm.name,))
p.start()
p.join()
print(shm.buf[0], p.exitcode)
shm.close()
shm.unlink()
`

// pythonGetrusage reads its own usage and its children's.
const pythonGetrusage = `
import resource, subprocess
r = resource.getrusage(resource.RUSAGE_SELF)
print(r.ru_maxrss > 1000, r.ru_utime + r.ru_stime > 0)
subprocess.run(["true"])
c = resource.getrusage(resource.RUSAGE_CHILDREN)
print(c.ru_maxrss > 0, c.ru_utime + c.ru_stime >= 0)
`

// bwrapNamespaces runs bubblewrap as coding agents wrap a tool call: the
// root bound read-only in a mount namespace of its own, then with a pid
// namespace, a proc and a /dev too, where the command is pid 2 under
// bwrap's init; then with every namespace but the network's and the
// user's (a cgroup one because /proc/self/ns/cgroup exists), a session
// of its own, a private /tmp and a host name.
const bwrapNamespaces = `bwrap --ro-bind / / true && echo ok
bwrap --ro-bind / / --unshare-pid --proc /proc --dev /dev true && echo ok
bwrap --ro-bind / / --unshare-pid --proc /proc --dev /dev sh -c 'echo $$ $PPID $(cat /proc/1/comm)'
bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try \
	--die-with-parent --new-session --tmpfs /tmp --hostname box sh -c 'echo hi > /tmp/x; cat /tmp/x; hostname; echo $$'`
