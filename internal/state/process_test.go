package state

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestStatusOfLiveSentry(t *testing.T) {
	self, err := Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	c := &Container{Recorded: Running, Sentry: self}
	if got := c.Status(); got != Running {
		t.Errorf("Status() = %s, want running", got)
	}
}

func TestStatusOfDeadSentry(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	c := &Container{Recorded: Created, Sentry: p}
	if got := c.Status(); got != Stopped {
		t.Errorf("Status() = %s, want stopped", got)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill of a gone process: %v", err)
	}
	if err := p.WaitGone(time.Second); err != nil {
		t.Errorf("WaitGone of a gone process: %v", err)
	}
}

func TestStatusOfZombieSentry(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	p, err := Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// Not reaped, the child stays a zombie once it exits.
	waitFor(t, func() bool { st, err := readStat(p.PID); return err == nil && st.state == 'Z' })
	c := &Container{Recorded: Running, Sentry: p}
	if got := c.Status(); got != Stopped {
		t.Errorf("Status() of a zombie = %s, want stopped", got)
	}
	if err := p.WaitGone(time.Second); err != nil {
		t.Errorf("WaitGone of a zombie: %v", err)
	}
}

func TestStatusOfReusedPID(t *testing.T) {
	self, err := Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	other := Process{PID: self.PID, StartTime: self.StartTime + 1}
	c := &Container{Recorded: Running, Sentry: other}
	if got := c.Status(); got != Stopped {
		t.Errorf("Status() with a different start time = %s, want stopped", got)
	}
	// The pid belongs to someone else now (this test): it must not be killed.
	if err := other.Kill(); err != nil {
		t.Errorf("Kill: %v", err)
	}
	if err := other.WaitGone(time.Second); err != nil {
		t.Errorf("WaitGone: %v", err)
	}
}

func TestKillAndWaitGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	p, err := Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitGone(50 * time.Millisecond); err == nil {
		t.Fatal("WaitGone returned while the process still ran")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitGone(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Error("Alive() after kill")
	}
}

func TestReadStatCommandWithParentheses(t *testing.T) {
	// A command name may hold ") " itself; only the last ')' ends it.
	dir := t.TempDir()
	exe := dir + "/a) b (c"
	if err := os.Symlink("/bin/sleep", exe); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	p, err := Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Alive() {
		t.Error("Alive() = false for a running process with parentheses in its name")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
	}
}
