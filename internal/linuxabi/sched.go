package linuxabi

// I/O priorities (ioprio_get(2), ioprio_set(2)): include/uapi/linux/ioprio.h.
const (
	IOPRIO_CLASS_SHIFT = 13
	IOPRIO_CLASS_NONE  = 0
	IOPRIO_CLASS_RT    = 1
	IOPRIO_CLASS_BE    = 2
	IOPRIO_CLASS_IDLE  = 3

	IOPRIO_WHO_PROCESS = 1
	IOPRIO_WHO_PGRP    = 2
	IOPRIO_WHO_USER    = 3
)

// Personality flags (personality(2)): include/uapi/linux/personality.h.
const (
	ADDR_NO_RANDOMIZE = 0x0040000
	// PER_QUERY is the persona that asks without setting.
	PER_QUERY = 0xffffffff
)
