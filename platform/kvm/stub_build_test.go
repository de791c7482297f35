package kvm

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/internal/golit"
)

var updateStub = flag.Bool("update", false, "rebuild stub_code.go from stub/stub_amd64.S")

// buildStub assembles stub/stub_amd64.S with descriptors.go's constants.
func buildStub(t *testing.T) []byte {
	t.Helper()
	for _, tool := range []string{"gcc", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make test installs it): cannot check the stub's machine code", tool)
		}
	}
	dir := t.TempDir()
	obj, bin := filepath.Join(dir, "stub.o"), filepath.Join(dir, "stub.bin")
	args := []string{"-c", "-x", "assembler-with-cpp", "-o", obj,
		fmt.Sprintf("-DNUM_VECTORS=%d", numVectors),
		fmt.Sprintf("-DVECTOR_STRIDE=%d", vectorStride),
		fmt.Sprintf("-DSYSCALL_PORT=%#x", syscallPort),
		"stub/stub_amd64.S"}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("assemble stub: %v\n%s", err, out)
	}
	if out, err := exec.Command("objcopy", "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy stub: %v\n%s", err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// TestStubCodeUpToDate fails when stub_code.go does not hold the assembly
// of stub/stub_amd64.S. `go test ./platform/kvm -run StubCode -update`
// regenerates it.
func TestStubCodeUpToDate(t *testing.T) {
	code := buildStub(t)
	if len(code) > pageSize {
		t.Fatalf("stub code is %d bytes, more than its page", len(code))
	}
	if *updateStub {
		src := golit.Generated("go test ./platform/kvm -run StubCode -update", "stub/stub_amd64.S", "kvm",
			golit.ByteVar("stubCode is the guest's supervisor-mode machine code, mapped at stubCodeVA.", "stubCode", code))
		if err := os.WriteFile("stub_code.go", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(code, stubCode) {
		t.Fatal("stub_code.go is stale: run `go test ./platform/kvm -run StubCode -update`")
	}
}

// TestEveryHandlerLeavesWithItsOwnPort decodes the stub: each vector's
// handler must be OUT %al to its vector number, and the syscall entry OUT
// to syscallPort, each followed by HLT.
func TestEveryHandlerLeavesWithItsOwnPort(t *testing.T) {
	e, err := readStubEntries()
	if err != nil {
		t.Fatal(err)
	}
	const outImm8, hlt = 0xe6, 0xf4
	check := func(name string, off uint64, port byte) {
		if off+3 > uint64(len(stubCode)) {
			t.Fatalf("%s at %#x is outside the stub", name, off)
		}
		if got := stubCode[off : off+3]; got[0] != outImm8 || got[1] != port || got[2] != hlt {
			t.Errorf("%s at %#x is % x, want out %%al,$%#x; hlt", name, off, got, port)
		}
	}
	for v := 0; v < numVectors; v++ {
		check(fmt.Sprintf("vector %d", v), e.vectors+uint64(v*vectorStride), byte(v))
	}
	check("syscall entry", e.syscall, syscallPort)
}
