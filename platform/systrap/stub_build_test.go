package systrap

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

// stubDefines passes layout.go's constants to the stub's assembly, so the two
// can never disagree.
func stubDefines() []string {
	defs := map[string]uint64{
		"STUB_BASE": stubBase, "STUB_END": stubEnd, "TASK_END": taskEnd,
		"PARAMS_VA": paramsVA, "PARAMS_OFF": paramsOff, "PARAM_SIZE": paramSize,
		"REQUEST_VA": requestVA, "RESULT_VA": resultVA, "SLOT_SIZE": slotSize,
		"PAR_CTL_FD": parCtlFD, "PAR_MEM_FD": parMemFD, "PAR_SYS_FPROG": parSysFprog,
		"PAR_GUEST_FPROG": parGuestFprog, "PAR_GUEST_MASK": parGuestMask, "PAR_PPID": parPPID,
		"PAR_HANDLER_SPIN": parHandlerSpin, "PAR_SYS_SPIN": parSysSpin, "PAR_GUEST_BUSY": parGuestBusy, "PAR_YIELD_SLOW": parYieldSlow, "PAR_CPU_CHECK": parCPUCheck,
		"PAR_KEEP_FDS": parKeepFDs, "NUM_KEEP_FDS": numKeepFDs,
		"PAR_SIGACTION": parSigaction, "PAR_NUM_SIGNALS": parNumSignals, "PAR_SIGNALS": parSignals, "PAR_DFL_ACTION": parDflAction,
		"TS_STATE": tsState, "TS_STUB_SLEEPING": tsStubSleeping, "TS_SENTRY_SLEEPING": tsSentrySleeping,
		"TS_SIGNO": tsSigno, "TS_SIGINFO": tsSiginfo, "TS_UCONTEXT": tsUcontext,
		"TS_FSBASE": tsFSBase, "TS_TRAP_TSC": tsTrapTSC, "TS_RESUME_TSC": tsResumeTSC, "TS_GSBASE": tsGSBase, "TS_FSGS_DIRTY": tsFSGSDirty, "TS_PARK": tsPark,
		"TS_ALT_STACK": tsAltStack, "TS_CPU_TIME": tsCPUTime,
		"THREAD_TRAPPED": threadTrapped, "THREAD_RESUME": threadResume,
		"REQ_SEQ": reqSeq, "REQ_NOPS": reqNOps, "REQ_IDLE": reqIdle, "REQ_OPS": reqOps,
		"OP_KIND": opKind, "OP_NR": opNr, "OP_ARGS": opArgs, "MAX_OPS": maxOps,
		"OP_CLONE_THREAD": opCloneThread, "OP_CLONE_STUB": opCloneStub,
		"RES_ACK": resAck, "RES_SENTRY_SLEEPING": resSentrySleeping,
		"RES_STUB_SLEEPING": resStubSleeping, "RES_NDONE": resNDone, "RES_RESULTS": resResults,
	}
	var out []string
	for k, v := range defs {
		out = append(out, fmt.Sprintf("-D%s=%#x", k, v))
	}
	return out
}

// assembled is the stub's machine code, assembled before any test runs
// (TestMain): once a test has started a platform, its reaper waits for
// every child of the test process (reaper.go) and would take gcc's exit
// status from under exec.Cmd.Wait.
var assembled struct {
	code []byte
	skip string // why the code could not be checked, if it could not
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	assembled.code, assembled.skip, assembled.err = assembleStub()
	os.Exit(m.Run())
}

// assembleStub assembles stub/stub_amd64.S into flat machine code.
func assembleStub() (code []byte, skip string, err error) {
	for _, tool := range []string{"gcc", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, tool + " not installed (make test installs it): cannot check the stub's machine code", nil
		}
	}
	dir, err := os.MkdirTemp("", "moat-stub-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	obj, bin := filepath.Join(dir, "stub.o"), filepath.Join(dir, "stub.bin")
	args := append([]string{"-c", "-x", "assembler-with-cpp", "-o", obj}, stubDefines()...)
	args = append(args, "stub/stub_amd64.S")
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("assemble stub: %v\n%s", err, out)
	}
	if out, err := exec.Command("objcopy", "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("objcopy stub: %v\n%s", err, out)
	}
	code, err = os.ReadFile(bin)
	return code, "", err
}

// buildStub is the stub's machine code for a test.
func buildStub(t *testing.T) []byte {
	t.Helper()
	if assembled.skip != "" {
		t.Skip(assembled.skip)
	}
	if assembled.err != nil {
		t.Fatal(assembled.err)
	}
	return assembled.code
}

// TestStubCodeUpToDate fails when stub_code.go does not hold the assembly of
// stub/stub_amd64.S with the current layout. `go test ./platform/systrap
// -run StubCode -update` regenerates it.
func TestStubCodeUpToDate(t *testing.T) {
	code := buildStub(t)
	if len(code) > codeSize {
		t.Fatalf("stub code is %d bytes, more than the %d reserved", len(code), codeSize)
	}
	if *updateStub {
		src := golit.Generated("go test ./platform/systrap -run StubCode -update", "stub/stub_amd64.S", "systrap",
			golit.ByteVar("stubCode is the stub's position-independent machine code, mapped at codeVA.", "stubCode", code))
		if err := os.WriteFile("stub_code.go", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(code, stubCode) {
		t.Fatal("stub_code.go is stale: run `go test ./platform/systrap -run StubCode -update`")
	}
}
