package signalfd

import "fmt"

// FDInfo is what Linux's signalfd_show_fdinfo adds to
// /proc/<pid>/fdinfo/<fd>: the signal set, bit n-1 for signal n.
func (f *File) FDInfo() string { return fmt.Sprintf("sigmask:\t%016x\n", f.mask.Load()) }
