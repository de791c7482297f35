package integration

// The scripts of the real-program checks of ptrace inside the sandbox
// (issue 14's acceptance): strace and gdb, unchanged, on guest programs.
// What they print holds addresses, pids and timings that differ from run
// to run; the scripts reduce it to its substance.

// straceFork traces a shell pipeline and its children: the calls that make
// and join the processes and carry the data must be seen, in every process
// (four: the shell, the two ends of the pipe, ls), each followed to its
// exit.
const straceFork = `strace -f -o /tmp/t sh -c 'echo hi | tr a-z A-Z; ls -d /'
echo "strace exit $?"
for c in execve clone pipe2 dup2 wait4 write exit_group; do
	grep -q "^[0-9]* *$c(" /tmp/t && echo "$c seen"
done
echo "$(cut -d' ' -f1 /tmp/t | sort -u | wc -l) processes"
echo "$(grep -c '+++ exited with 0 +++' /tmp/t) exits"
grep -q 'write(1, "hi\\n", 3' /tmp/t && echo "echo's write seen"
grep -q 'execve("/usr/bin/tr", \["tr", "a-z", "A-Z"\]' /tmp/t && echo "tr's execve seen"`

const straceForkOut = `HI
/
strace exit 0
execve seen
clone seen
pipe2 seen
dup2 seen
wait4 seen
write seen
exit_group seen
4 processes
4 exits
echo's write seen
tr's execve seen
`

// gdbBacktrace runs a program that writes through a null pointer under
// gdb, which stops it at the SIGSEGV and prints the stack: the faulting
// function with its argument and line, then its caller.
const gdbBacktrace = `cat > /tmp/crash.c <<'C'
#include <stddef.h>
void crash_here(int *p) { *p = 42; }
int main(void) { crash_here(NULL); return 0; }
C
gcc -g -O0 -o /tmp/crash /tmp/crash.c
gdb -batch -ex run -ex bt /tmp/crash > /tmp/gdb.out 2>&1
echo "gdb exit $?"
grep -o 'Program received signal SIGSEGV, Segmentation fault' /tmp/gdb.out
grep '^#0 ' /tmp/gdb.out | grep -o 'in crash_here (p=0x0) at /tmp/crash.c:2'
grep '^#1 ' /tmp/gdb.out | grep -o 'in main () at /tmp/crash.c:3'`

const gdbBacktraceOut = `gdb exit 0
Program received signal SIGSEGV, Segmentation fault
in crash_here (p=0x0) at /tmp/crash.c:2
in main () at /tmp/crash.c:3
`
