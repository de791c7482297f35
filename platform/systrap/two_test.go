package systrap

import (
	"testing"

	"github.com/moat-sandbox/moat/sentry/arch"
)

func TestTwoThreads(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	code := []byte{0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7}
	as, ctx := newGuest(t, p, m, code)
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags}
	if _, err := ctx.Switch(&regs); err != nil {
		t.Fatal(err)
	}
	ctx2, err := as.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	regs2 := regs
	if _, err := ctx2.Switch(&regs2); err != nil {
		t.Fatal(err)
	}
}
