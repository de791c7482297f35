package kernel

// Thread and process ids as one task sees another's.

// LookupTask returns the living task whose thread id, as t sees it, is
// tid; nil if there is none.
func (t *Task) LookupTask(tid int32) *Task { return t.k.TaskByTID(tid) }

// tidIn is t's thread id as observer sees it.
func (t *Task) tidIn(observer *Task) int32 { return t.tid }

// tidIn is the thread id tid of task t as observer sees it.
func (k *Kernel) tidIn(tid int32, t, observer *Task) int32 { return tid }
