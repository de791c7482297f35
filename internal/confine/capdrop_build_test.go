package confine

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/moat-sandbox/moat/internal/golit"
)

// TestCapdropELFUpToDate fails when capdrop_elf.go does not hold the
// program capdrop/capdrop_amd64.S links to. `go test ./internal/confine
// -run CapdropELF -update` regenerates it.
func TestCapdropELFUpToDate(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (make test installs it): cannot check capdrop's program")
	}
	bin := filepath.Join(t.TempDir(), "capdrop")
	out, err := exec.Command("gcc", "-nostdlib", "-static", "-Wl,--build-id=none", "-Wl,-n", "-s",
		"-DTABLE_FD="+strconv.Itoa(TableFD), "-o", bin, "capdrop/capdrop_amd64.S").CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	elf, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		src := golit.Generated("go test ./internal/confine -run CapdropELF -update", "capdrop/capdrop_amd64.S", "confine",
			golit.ByteVar("capdropELF is capdrop, a static x86-64 executable (capdrop.go).", "capdropELF", elf))
		if err := os.WriteFile("capdrop_elf.go", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(elf, capdropELF) {
		t.Fatal("capdrop_elf.go is stale: run `go test ./internal/confine -run CapdropELF -update`")
	}
}
