package vfs

import "sort"

// WatchInfo is one watch of an inotify instance, for fdinfo.
type WatchInfo struct {
	WD   int32
	ID   FileID // the watched inode
	Mask uint32 // its events and flags, as inotify_add_watch kept them
}

// Watches lists o's watches, the newest (highest descriptor) first, as
// Linux's fdinfo walks an instance's marks.
func Watches(o WatchOwner) []WatchInfo {
	watches.mu.RLock()
	defer watches.mu.RUnlock()
	ow := watches.owners[o]
	if ow == nil {
		return nil
	}
	out := make([]WatchInfo, 0, len(ow.wds))
	for _, w := range ow.wds {
		out = append(out, WatchInfo{WD: w.wd, ID: w.id, Mask: w.mask})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WD > out[j].WD })
	return out
}
