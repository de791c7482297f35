package vdso

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/golit"
)

var updateImage = flag.Bool("update", false, "rebuild vdso_image.go from src/vdso.c and src/vdso.lds")

// imageDefines passes params.go's layout to the C source and the linker
// script, so the three can never disagree.
func imageDefines() []string {
	defs := map[string]uint64{
		"PARAMS_SIZE": ParamsSize, "PARAM_SEQ": paramSeq, "PARAM_FLAGS": paramFlags,
		"PARAM_SHIFT": paramShift, "PARAM_TSC_BASE": paramTSCBase, "PARAM_MULT": paramMult,
		"PARAM_MONO_BASE": paramMonoBase, "PARAM_REAL_BASE": paramRealBase, "PARAM_CPU_TRAP": paramCPUTrap,
		"FLAG_TSC": flagTSC, "LINUX_VERSION_CODE": linuxVersionCode,
	}
	var out []string
	for k, v := range defs {
		out = append(out, fmt.Sprintf("-D%s=%#x", k, v))
	}
	sort.Strings(out)
	return append(out, fmt.Sprintf("-Wl,--defsym=PARAMS_SIZE=%#x", ParamsSize))
}

// imageFlags build a freestanding, stripped, relocation-free shared object
// with no build id, no debug information and no compiler banner, so the same
// toolchain always makes the same bytes.
var imageFlags = []string{
	"-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror",
	"-fPIC", "-shared", "-nostdlib", "-ffreestanding", "-fno-builtin",
	"-fno-stack-protector", "-fcf-protection=none", "-mgeneral-regs-only",
	"-fno-common", "-fvisibility=hidden", "-fasynchronous-unwind-tables", "-g0",
	"-Wl,-T,src/vdso.lds", "-Wl,-soname=linux-vdso.so.1", "-Wl,--hash-style=both",
	"-Wl,--build-id=none", "-Wl,--eh-frame-hdr", "-Wl,-Bsymbolic", "-Wl,--no-undefined",
	"-Wl,-z,max-page-size=4096", "-Wl,-z,noexecstack", "-s",
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make test installs it)", tool)
		}
	}
}

// buildImage compiles and links src/vdso.c into dir and returns the ELF.
func buildImage(t *testing.T, dir string) []byte {
	t.Helper()
	needTools(t, "gcc", "ld")
	out := filepath.Join(dir, "vdso.so")
	args := append(append([]string{}, imageFlags...), imageDefines()...)
	args = append(args, "-o", out, "src/vdso.c")
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("build vDSO: %v\n%s", err, b)
	}
	img, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// toolchain names the compiler and linker, as recorded in vdso_image.go.
func toolchain(t *testing.T) string {
	var names []string
	for _, tool := range []string{"gcc", "ld"} {
		b, err := exec.Command(tool, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", tool, err)
		}
		names = append(names, strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	}
	return strings.Join(names, "; ")
}

// TestVDSOImageUpToDate fails when vdso_image.go does not hold the image
// src/ builds with the current layout. `go test ./sentry/vdso -run
// VDSOImage -update` regenerates it. The bytes depend on the compiler: with
// another toolchain than the one that made the committed image, the test
// says so and skips the comparison (the other tests still check the
// committed image itself).
func TestVDSOImageUpToDate(t *testing.T) {
	img := buildImage(t, t.TempDir())
	if again := buildImage(t, t.TempDir()); !bytes.Equal(img, again) {
		t.Fatal("two builds of the vDSO differ: the build is not deterministic")
	}
	if len(img) > 2*pageSize {
		t.Errorf("vDSO is %d bytes: more than two pages", len(img))
	}
	tc := toolchain(t)
	if *updateImage {
		src := golit.Generated("go test ./sentry/vdso -run VDSOImage -update", "src/vdso.c and src/vdso.lds", "vdso",
			fmt.Sprintf("// vdsoToolchain built vdsoImage.\nconst vdsoToolchain = %q\n", tc),
			golit.ByteVar("vdsoImage is the vDSO's ELF image (linux-vdso.so.1).", "vdsoImage", img))
		if err := os.WriteFile("vdso_image.go", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(img, vdsoImage) {
		if tc != vdsoToolchain {
			t.Skipf("vdso_image.go was built by %q, this host has %q: cannot compare the bytes", vdsoToolchain, tc)
		}
		t.Fatal("vdso_image.go is stale: run `go test ./sentry/vdso -run VDSOImage -update`")
	}
}

// TestImageELF checks the committed image is what glibc and Linux's
// conventions expect of a vDSO.
func TestImageELF(t *testing.T) {
	f, err := elf.NewFile(bytes.NewReader(Image()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_DYN {
		t.Errorf("class %v machine %v type %v, want ELFCLASS64 EM_X86_64 ET_DYN", f.Class, f.Machine, f.Type)
	}
	if f.Entry != 0 {
		t.Errorf("entry %#x, want 0", f.Entry)
	}
	count := map[elf.ProgType]int{}
	for _, p := range f.Progs {
		count[p.Type]++
		switch p.Type {
		case elf.PT_LOAD:
			if p.Off != 0 || p.Vaddr != 0 || p.Filesz != p.Memsz || p.Flags != elf.PF_R|elf.PF_X {
				t.Errorf("PT_LOAD %+v: want offset 0, address 0, no bss, R+X", p.ProgHeader)
			}
			if p.Filesz > uint64(len(Image())) {
				t.Errorf("PT_LOAD is %d bytes, the image %d", p.Filesz, len(Image()))
			}
		case elf.PT_NOTE:
			note := make([]byte, p.Filesz)
			if _, err := p.ReadAt(note, 0); err != nil {
				t.Fatal(err)
			}
			le := binary.LittleEndian
			if len(note) < 20 || le.Uint32(note) != 6 || string(note[12:17]) != "Linux" || le.Uint32(note[20:]) != linuxVersionCode {
				t.Errorf("note %x: want Linux, version %#x", note, linuxVersionCode)
			}
		}
	}
	for _, pt := range []elf.ProgType{elf.PT_LOAD, elf.PT_DYNAMIC, elf.PT_NOTE} {
		if count[pt] != 1 {
			t.Errorf("%d %v segments, want 1", count[pt], pt)
		}
	}
	if len(f.Progs) != 4 || count[elf.PT_GNU_EH_FRAME] != 1 {
		t.Errorf("segments %v: want LOAD, DYNAMIC, NOTE, GNU_EH_FRAME", count)
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA || s.Type == elf.SHT_REL {
			t.Errorf("relocation section %s: a vDSO is never relocated", s.Name)
		}
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type == elf.SHT_NOBITS {
			t.Errorf("section %s has no bits: no bss in a vDSO", s.Name)
		}
	}
	if so, err := f.DynString(elf.DT_SONAME); err != nil || len(so) != 1 || so[0] != "linux-vdso.so.1" {
		t.Errorf("soname %q (%v), want linux-vdso.so.1", so, err)
	}
	for _, tag := range []elf.DynTag{elf.DT_HASH, elf.DT_GNU_HASH, elf.DT_VERDEF, elf.DT_VERSYM, elf.DT_SYMTAB, elf.DT_STRTAB} {
		if v, err := f.DynValue(tag); err != nil || len(v) != 1 {
			t.Errorf("dynamic tag %v: %v %v", tag, v, err)
		}
	}
	for _, tag := range []elf.DynTag{elf.DT_TEXTREL, elf.DT_RELA, elf.DT_REL, elf.DT_JMPREL, elf.DT_NEEDED} {
		if v, _ := f.DynValue(tag); len(v) != 0 {
			t.Errorf("dynamic tag %v present", tag)
		}
	}
	vers, err := f.DynamicVersions()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vers {
		names = append(names, v.Name)
	}
	if fmt.Sprint(names) != "[linux-vdso.so.1 LINUX_2.6]" {
		t.Errorf("version definitions %v, want [linux-vdso.so.1 LINUX_2.6]", names)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]elf.Symbol{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			got[s.Name] = s
		}
	}
	for _, name := range []string{"clock_gettime", "gettimeofday", "time", "getcpu", "clock_getres"} {
		for _, n := range []string{"__vdso_" + name, name} {
			s, ok := got[n]
			if !ok {
				t.Errorf("%s not exported", n)
				continue
			}
			bind := elf.STB_GLOBAL
			if n == name {
				bind = elf.STB_WEAK
			}
			if s.Version != "LINUX_2.6" || elf.ST_BIND(s.Info) != bind || s.Section == elf.SHN_UNDEF || s.Size == 0 {
				t.Errorf("%s: version %q bind %v section %v size %d; want LINUX_2.6 %v, defined", n, s.Version, elf.ST_BIND(s.Info), s.Section, s.Size, bind)
			}
			delete(got, n)
		}
		if got, want := symValue(syms, name), symValue(syms, "__vdso_"+name); got != want {
			t.Errorf("%s at %#x, __vdso_%s at %#x: want an alias", name, got, name, want)
		}
	}
	for n := range got {
		t.Errorf("unexpected export %s", n)
	}
}

func symValue(syms []elf.Symbol, name string) uint64 {
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	return 0
}
