package vdso

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGlibcUsesVDSO runs testdata/clocks.c, built static, static-pie and
// dynamic, under testdata/loader.c, which maps the parameter page and the
// image from a memfd this test keeps current (as moat's memory file will be)
// and passes AT_SYSINFO_EHDR pointing at the image. The loader also makes
// the five system calls the vDSO replaces fail with EPERM: every answer the
// program prints came from the vDSO, and its monotonic clock carries the
// offset only the parameter page knows.
func TestGlibcUsesVDSO(t *testing.T) {
	needTSC(t)
	needTools(t, "gcc")
	dir := t.TempDir()
	build := func(out string, args ...string) string {
		t.Helper()
		path := filepath.Join(dir, out)
		if b, err := exec.Command("gcc", append(args, "-o", path)...).CombinedOutput(); err != nil {
			t.Skipf("cannot build %s (static glibc missing? make test installs libc6-dev): %v\n%s", out, err, b)
		}
		return path
	}
	loader := build("loader", "-O2", "-nostdlib", "-static", "-no-pie", "-ffreestanding", "-fno-builtin",
		"-fno-stack-protector", "-Wall", "-Wextra", "-Werror", "-Wl,-Ttext-segment=0x20000000", "testdata/loader.c")
	static := build("clocks-static", "-O2", "-static", "testdata/clocks.c")
	staticPIE := build("clocks-static-pie", "-O2", "-static-pie", "testdata/clocks.c")
	dynamic := build("clocks-dynamic", "-O2", "testdata/clocks.c")
	interp := interpreter(t, dynamic)

	// The memory file: parameters then image, shared with the loader.
	fd, err := unix.MemfdCreate("moat-vdso-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	file := os.NewFile(uintptr(fd), "moat-vdso-test")
	defer file.Close()
	size := ParamsSize + 2*pageSize
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	copy(mem[ParamsSize:], ImagePages())
	p := NewParams(mem[:ParamsSize], guestOffset)
	stop := make(chan struct{})
	defer close(stop)
	p.Start(stop)
	for p.load32(paramFlags)&flagTSC == 0 {
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}

	for _, c := range []struct {
		name string
		argv []string
	}{
		{"static", []string{static}},
		{"static-pie", []string{staticPIE}},
		{"dynamic", []string{interp, dynamic}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, seccomp := range []bool{true, false} {
				args := []string{"3", strconv.Itoa(ParamsSize)}
				if seccomp {
					args = append([]string{"-s"}, args...)
				}
				args = append(append(args, c.argv...), "1000000")
				cmd := exec.Command(loader, args...)
				cmd.ExtraFiles = []*os.File{file}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				monoLo, realLo := hostClock(unix.CLOCK_MONOTONIC)+guestOffset, hostClock(unix.CLOCK_REALTIME)
				out, err := cmd.Output()
				monoHi, realHi := hostClock(unix.CLOCK_MONOTONIC)+guestOffset, hostClock(unix.CLOCK_REALTIME)
				if err != nil {
					t.Fatalf("%v: %v\n%s%s", args, err, out, stderr.Bytes())
				}
				v := parseOutput(t, out)
				if v["error"] != "" {
					t.Fatalf("the program failed: %s\n%s", v["error"], out)
				}
				ehdr, err1 := strconv.ParseUint(v["ehdr"], 0, 64)
				mapped, err2 := strconv.ParseUint(v["loader vdso"], 0, 64)
				if err1 != nil || err2 != nil || ehdr != mapped || ehdr == 0 {
					t.Errorf("getauxval(AT_SYSINFO_EHDR) = %s, the loader mapped the vDSO at %s", v["ehdr"], v["loader vdso"])
				}
				inRange(t, "monotonic", num(t, v, "monotonic"), monoLo, monoHi)
				inRange(t, "realtime", num(t, v, "realtime"), realLo, realHi)
				inRange(t, "gettimeofday", num(t, v, "gettimeofday"), realLo/1000, realHi/1000)
				inRange(t, "time", num(t, v, "time"), realLo/1e9, realHi/1e9)
				if v["getres_coarse"] != "4000000" || v["getcpu"] != "0 0" || v["backwards"] != "0" {
					t.Errorf("getres_coarse %s, getcpu %s, backwards %s; want 4000000, 0 0, 0",
						v["getres_coarse"], v["getcpu"], v["backwards"])
				}
				// The CPU-time clock goes through the vDSO's syscall
				// instruction: blocked with -s, answered without.
				want := "0 0"
				if seccomp {
					want = fmt.Sprintf("-1 %d", unix.EPERM)
				}
				if v["cputime"] != want {
					t.Errorf("clock_gettime(PROCESS_CPUTIME_ID) gave %q, want %q", v["cputime"], want)
				}
				t.Logf("seccomp %v: %s ns per clock_gettime(CLOCK_MONOTONIC) over %s calls", seccomp, v["ns_per_call"], v["calls"])
			}
		})
	}
}

// interpreter is the dynamic loader a dynamic executable names.
func interpreter(t *testing.T, path string) string {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	t.Fatalf("%s has no PT_INTERP", path)
	return ""
}

// parseOutput reads the "key value" lines of the loader and the program.
func parseOutput(t *testing.T, out []byte) map[string]string {
	v := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if rest, ok := strings.CutPrefix(l, "loader vdso "); ok {
			v["loader vdso"] = rest
			continue
		}
		k, val, _ := strings.Cut(l, " ")
		v[k] = val
	}
	return v
}

func num(t *testing.T, v map[string]string, k string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(v[k], 10, 64)
	if err != nil {
		t.Fatalf("%s: %q: %v", k, v[k], err)
	}
	return n
}

func inRange(t *testing.T, what string, got, lo, hi int64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %d, host (plus offset) says [%d, %d]", what, got, lo, hi)
	}
}
