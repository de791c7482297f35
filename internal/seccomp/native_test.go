package seccomp

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The host kernel is the reference: these helpers load programs into a
// child process (this test binary, re-executed) and report what Linux made
// of them. No privilege is needed: the child sets no_new_privs.

const (
	helperEnv = "MOAT_SECCOMP_HELPER" // set: be the helper; stdin holds the programs
	argsEnv   = "MOAT_SECCOMP_ARGS"   // argument vectors for probeNr, ';'-separated
)

// probeNr is the call the probing programs judge: Linux has never
// implemented afs_syscall, so no code in the child makes it but the probe.
const probeNr = unix.SYS_AFS_SYSCALL

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(helperEnv); ok {
		progs, _ := io.ReadAll(os.Stdin)
		os.Exit(nativeHelper(strings.TrimSpace(string(progs)), os.Getenv(argsEnv)))
	}
	os.Exit(m.Run())
}

// nativeHelper installs each program in turn, printing "ok" or the errno
// for each, then makes the probe call with each argument vector and prints
// its raw return value.
func nativeHelper(progs, args string) int {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("prctl:", err)
		return 1
	}
	for _, p := range strings.Split(progs, ",") {
		b, err := hex.DecodeString(p)
		if err != nil {
			return 1
		}
		prog, _ := Decode(b)
		if err := installUnchecked(prog); err != nil {
			fmt.Println(int(err.(unix.Errno)))
		} else {
			fmt.Println("ok")
		}
	}
	if args == "" {
		return 0
	}
	for _, vec := range strings.Split(args, ";") {
		var a [6]uintptr
		for i, f := range strings.Fields(vec) {
			v, _ := strconv.ParseUint(f, 0, 64)
			a[i] = uintptr(v)
		}
		// The kernel's raw return: Go reports -4094 to -1 as an errno.
		r, _, e := unix.RawSyscall6(probeNr, a[0], a[1], a[2], a[3], a[4], a[5])
		if e != 0 {
			r = uintptr(-int(e))
		}
		fmt.Println(int64(r))
	}
	return 0
}

// nativeRun runs the helper and returns its output lines, and how it ended.
func nativeRun(t *testing.T, progs [][]Insn, args [][6]uint64) ([]string, *os.ProcessState) {
	t.Helper()
	enc := make([]string, len(progs))
	for i, p := range progs {
		enc[i] = hex.EncodeToString(Encode(p))
	}
	vecs := make([]string, len(args))
	for i, a := range args {
		f := make([]string, 6)
		for j, v := range a {
			f[j] = strconv.FormatUint(v, 10)
		}
		vecs[i] = strings.Join(f, " ")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", argsEnv+"="+strings.Join(vecs, ";"))
	cmd.Stdin = strings.NewReader(strings.Join(enc, ","))
	out, _ := cmd.Output()
	return strings.Split(strings.TrimSpace(string(out)), "\n"), cmd.ProcessState
}

// installUnchecked is Install without moat's own checks: the kernel's are
// the ones under test.
func installUnchecked(prog []Insn) error { return installRaw(prog) }
