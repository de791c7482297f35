package kernel

// Exit ends the calling task (exit(2)); the process ends with its last task.
func (t *Task) Exit(code int) {
	t.tg.mu.Lock()
	if !t.tg.exited && len(t.tg.tasks) == 1 {
		t.tg.status = ExitStatus{Code: code & 0xff}
	}
	t.tg.mu.Unlock()
	t.exiting.Store(true)
}

// ExitGroup ends every task of the process with code (exit_group(2)).
func (t *Task) ExitGroup(code int) {
	t.tg.end(ExitStatus{Code: code & 0xff})
}

// killProcess ends the process as signal sig would.
func (t *Task) killProcess(sig int) {
	t.tg.end(ExitStatus{Signo: sig})
}

// end records the process's status (the first one wins) and stops all its
// tasks.
func (tg *ThreadGroup) end(s ExitStatus) {
	tg.mu.Lock()
	if !tg.exited {
		tg.exited = true
		tg.status = s
	}
	tasks := append([]*Task(nil), tg.tasks...)
	tg.mu.Unlock()
	for _, task := range tasks {
		if !task.exiting.Swap(true) {
			task.ctx.Interrupt()
		}
	}
}

// exit releases the task once its loop has stopped; the last task out
// releases the process, and init's exit ends the sandbox.
func (t *Task) exit() {
	k := t.k
	k.mu.Lock()
	delete(k.tasks, t.tid)
	k.mu.Unlock()

	tg := t.tg
	tg.mu.Lock()
	for i, x := range tg.tasks {
		if x == t {
			tg.tasks = append(tg.tasks[:i], tg.tasks[i+1:]...)
			break
		}
	}
	last := len(tg.tasks) == 0
	tg.exited = tg.exited || last
	status := tg.status
	tg.mu.Unlock()
	if !last {
		t.ctx.Release()
		return
	}
	t.fds.CloseAll()
	// Releasing the address space ends its threads: the context then has
	// nothing left to release.
	t.mm.Release()
	t.ctx.Release()
	if tg == k.init {
		k.finish(status)
	}
}

// Kill ends the sandbox at once as signal sig would: init's death ends
// every process, and no task blocked in the sentry is waited for.
func (k *Kernel) Kill(sig int) {
	k.mu.Lock()
	init := k.init
	k.mu.Unlock()
	if init != nil {
		init.end(ExitStatus{Signo: sig})
	}
	k.finish(ExitStatus{Signo: sig})
}

// InitHandles reports whether init has a handler (not SIG_DFL or SIG_IGN)
// for sig.
func (k *Kernel) InitHandles(sig int) bool {
	k.mu.Lock()
	init := k.init
	k.mu.Unlock()
	if init == nil || !ValidSignal(sig) {
		return false
	}
	h := init.Action(sig).Handler
	return h != SigDfl && h != SigIgn
}
