package mm

// MembarrierRegistered is the set of membarrier(2) registrations the
// address space's users made (Linux's mm->membarrier_state, as the
// MEMBARRIER_CMD_REGISTER_* bits). A fork's copy keeps them and the new
// address space of an exec has none, as on Linux.
func (m *MemoryManager) MembarrierRegistered() uint32 { return m.membarrier.Load() }

// MembarrierRegister adds the registrations in bits.
func (m *MemoryManager) MembarrierRegister(bits uint32) { m.membarrier.Or(bits) }
