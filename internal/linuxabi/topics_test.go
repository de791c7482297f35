package linuxabi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The constants of the files beside linuxabi.go, one per topic, each
// checked against the kernel's UAPI headers and against unix.

// topicFiles are those files.
var topicFiles = []string{"sched.go", "ipc.go", "ptrace.go"}

// topicHeaders are the headers that define their constants.
var topicHeaders = []string{"limits.h", "linux/ioprio.h", "linux/ipc.h", "linux/shm.h", "linux/sem.h", "linux/msg.h", "asm-generic/siginfo.h", "stddef.h", "sys/user.h", "linux/personality.h"}

var fromTopicHeaders = []struct {
	c    string
	want int64
}{
	{"IOPRIO_CLASS_SHIFT", IOPRIO_CLASS_SHIFT}, {"IOPRIO_CLASS_NONE", IOPRIO_CLASS_NONE},
	{"IOPRIO_CLASS_RT", IOPRIO_CLASS_RT}, {"IOPRIO_CLASS_BE", IOPRIO_CLASS_BE},
	{"IOPRIO_CLASS_IDLE", IOPRIO_CLASS_IDLE}, {"IOPRIO_WHO_PROCESS", IOPRIO_WHO_PROCESS},
	{"IOPRIO_WHO_PGRP", IOPRIO_WHO_PGRP}, {"IOPRIO_WHO_USER", IOPRIO_WHO_USER},
	{"ADDR_NO_RANDOMIZE", ADDR_NO_RANDOMIZE},
	{"IPC_INFO", IPC_INFO}, {"SHM_HUGETLB", SHM_HUGETLB}, {"SHM_REMAP", SHM_REMAP}, {"SHM_EXEC", SHM_EXEC},
	{"SHM_LOCK", SHM_LOCK}, {"SHM_UNLOCK", SHM_UNLOCK}, {"SHM_STAT", SHM_STAT}, {"SHM_INFO", SHM_INFO},
	{"SHM_STAT_ANY", SHM_STAT_ANY}, {"SEM_UNDO", SEM_UNDO}, {"GETPID", GETPID}, {"GETVAL", GETVAL},
	{"GETALL", GETALL}, {"GETNCNT", GETNCNT}, {"GETZCNT", GETZCNT}, {"SETVAL", SETVAL}, {"SETALL", SETALL},
	{"SEM_STAT", SEM_STAT}, {"SEM_INFO", SEM_INFO}, {"SEM_STAT_ANY", SEM_STAT_ANY},
	{"MSG_STAT", MSG_STAT}, {"MSG_INFO", MSG_INFO}, {"MSG_STAT_ANY", MSG_STAT_ANY},
	{"MSG_NOERROR", MSG_NOERROR}, {"MSG_EXCEPT", MSG_EXCEPT}, {"MSG_COPY", MSG_COPY},
	{"SHMMAX", asInt64(SHMMAX)}, {"SHMALL", asInt64(SHMALL)}, {"SHMMIN", SHMMIN}, {"SHMMNI", SHMMNI}, {"SHMSEG", SHMSEG},
	{"SEMMNI", SEMMNI}, {"SEMMSL", SEMMSL}, {"SEMMNS", SEMMNS}, {"SEMOPM", SEMOPM}, {"SEMVMX", SEMVMX},
	{"SEMAEM", SEMAEM}, {"SEMUME", SEMUME}, {"SEMMNU", SEMMNU}, {"SEMMAP", SEMMAP}, {"SEMUSZ", SEMUSZ},
	{"MSGMNI", MSGMNI}, {"MSGMAX", MSGMAX}, {"MSGMNB", MSGMNB}, {"MSGPOOL", MSGPOOL}, {"MSGTQL", MSGTQL},
	{"MSGMAP", MSGMAP}, {"MSGSSZ", MSGSSZ}, {"MSGSEG", MSGSEG},
	{"CLD_TRAPPED", CLD_TRAPPED}, {"TRAP_BRKPT", TRAP_BRKPT}, {"TRAP_TRACE", TRAP_TRACE},
	{"sizeof(struct user_regs_struct)", SizeofUserRegs}, {"offsetof(struct user, u_debugreg)", OffsetofUserDebugreg},
	// The C library's struct user ends with the debug registers; the
	// kernel's has two more words.
	{"sizeof(struct user) + 16", SizeofUser},
}

// asInt64 is v as the test's C program prints it, a long long.
func asInt64(v uint64) int64 { return int64(v) }

func TestTopicConstantsMatchTheKernelHeaders(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not on PATH (make deps installs it)")
	}
	dir := t.TempDir()
	var c strings.Builder
	for _, h := range append([]string{"stdio.h"}, topicHeaders...) {
		fmt.Fprintf(&c, "#include <%s>\n", h)
	}
	c.WriteString("int main(void) {\n")
	for _, h := range fromTopicHeaders {
		fmt.Fprintf(&c, "\tprintf(\"%%lld\\n\", (long long)(%s));\n", h.c)
	}
	c.WriteString("\treturn 0;\n}\n")
	src, bin := filepath.Join(dir, "abi.c"), filepath.Join(dir, "abi")
	if err := os.WriteFile(src, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-o", bin, src).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "No such file") {
			t.Skipf("the kernel headers are not installed (linux-libc-dev): %s", out)
		}
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(fromTopicHeaders) {
		t.Fatalf("got %d values, want %d", len(lines), len(fromTopicHeaders))
	}
	for i, h := range fromTopicHeaders {
		got, err := strconv.ParseInt(lines[i], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got != h.want {
			t.Errorf("%s is %#x in the headers, %#x here", h.c, got, h.want)
		}
	}
}

// TestTopicConstantsAreNotInUnix is TestNothingHereIsInUnix for the
// topic files.
func TestTopicConstantsAreNotInUnix(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Skipf("golang.org/x/sys is not in the module cache: %v", err)
	}
	unixDir := filepath.Join(strings.TrimSpace(string(dir)), "unix")
	files, err := filepath.Glob(filepath.Join(unixDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	unixConsts := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || !(strings.Contains(f, "linux") || !strings.Contains(filepath.Base(f), "_")) {
			continue
		}
		for _, name := range constNames(t, f) {
			unixConsts[name] = true
		}
	}
	if !unixConsts["O_RDONLY"] {
		t.Fatal("found no constants in the unix package")
	}
	for _, file := range topicFiles {
		for _, name := range constNames(t, file) {
			if unixConsts[name] {
				t.Errorf("%s (%s) is defined by golang.org/x/sys/unix: use unix.%s", name, file, name)
			}
		}
	}
}
