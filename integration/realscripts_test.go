package integration

// The longer programs of realChecks, with the output runc gives.

// pythonThreads: eight threads increment one counter under a lock; the
// total shows that none of the increments was lost.
const pythonThreads = `
import threading
count = 0
lock = threading.Lock()
def work():
    global count
    for _ in range(10000):
        with lock:
            count += 1
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(count)
`

const pythonSubprocess = `
import subprocess
print(subprocess.run(["echo", "x"], capture_output=True).stdout)
`

const pythonPool = `
import multiprocessing
with multiprocessing.Pool(2) as pool:
    print(pool.map(abs, [-1, -2, -3]))
`

// pythonAlarm exits from the handler; pause returning means the signal
// was lost or came without the handler running.
const pythonAlarm = `
import signal, sys
def on_alarm(signum, frame):
    print("alarm", signum)
    sys.exit(0)
signal.signal(signal.SIGALRM, on_alarm)
signal.alarm(1)
signal.pause()
print("pause returned")
sys.exit(1)
`

const pythonFork = `
import os
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
print("child exited", os.waitstatus_to_exitcode(status))
`

const gccCompile = `set -e
cat > /tmp/sum.c <<'EOF'
#include <stdio.h>

int main(void) {
    int sum = 0;
    for (int i = 1; i <= 100; i++)
        sum += i;
    printf("sum %d\n", sum);
    return 0;
}
EOF
gcc -O2 -Wall -o /tmp/sum /tmp/sum.c
/tmp/sum
`

// makeTwice: shout.txt depends on greeting.txt. The first make builds both,
// the second finds shout.txt up to date. printf writes the recipes' tabs.
const makeTwice = `set -e
mkdir /tmp/m
printf 'shout.txt: greeting.txt\n\ttr a-z A-Z < greeting.txt > shout.txt\n' > /tmp/m/Makefile
printf 'greeting.txt:\n\techo hello > greeting.txt\n' >> /tmp/m/Makefile
make -C /tmp/m
make -C /tmp/m
cat /tmp/m/shout.txt
`

const makeTwiceOut = `make: Entering directory '/tmp/m'
echo hello > greeting.txt
tr a-z A-Z < greeting.txt > shout.txt
make: Leaving directory '/tmp/m'
make: Entering directory '/tmp/m'
make: 'shout.txt' is up to date.
make: Leaving directory '/tmp/m'
HELLO
`

// gitCommit configures the user in the repository: HOME is on the
// read-only rootfs.
const gitCommit = `set -e
mkdir /tmp/r
cd /tmp/r
git init -q
git config user.name moat
git config user.email moat@example.com
echo hello > README
git add README
git commit -q -m 'first commit'
git log --oneline | wc -l
git status
`

const gitCommitOut = `1
On branch master
nothing to commit, working tree clean
`
