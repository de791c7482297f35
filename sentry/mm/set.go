package mm

import "sort"

// span is what a rangeSet needs of its elements: vmas and pmas.
type span[T any] interface {
	*T
	bounds() (start, end uintptr)
	// splitAt trims the receiver to end at addr and returns the part from
	// addr on.
	splitAt(addr uintptr) T
}

// rangeSet is a sorted list of non-overlapping address ranges.
type rangeSet[T any, P span[T]] struct {
	s []T
}

func end[T any, P span[T]](v *T) uintptr {
	_, e := P(v).bounds()
	return e
}

func start[T any, P span[T]](v *T) uintptr {
	s, _ := P(v).bounds()
	return s
}

// find returns the index of the first range that ends above addr.
func (r *rangeSet[T, P]) find(addr uintptr) int {
	return sort.Search(len(r.s), func(i int) bool { return end[T, P](&r.s[i]) > addr })
}

// lookup returns the range containing addr.
func (r *rangeSet[T, P]) lookup(addr uintptr) (P, bool) {
	i := r.find(addr)
	if i < len(r.s) && start[T, P](&r.s[i]) <= addr {
		return P(&r.s[i]), true
	}
	return nil, false
}

// split makes addr a boundary if a range straddles it.
func (r *rangeSet[T, P]) split(addr uintptr) {
	i := r.find(addr)
	if i == len(r.s) || start[T, P](&r.s[i]) >= addr {
		return
	}
	hi := P(&r.s[i]).splitAt(addr)
	r.s = append(r.s, hi)
	copy(r.s[i+2:], r.s[i+1:])
	r.s[i+1] = hi
}

// isolate splits at start and end and returns the index range [i, j) of the
// ranges inside [start, end).
func (r *rangeSet[T, P]) isolate(lo, hi uintptr) (int, int) {
	r.split(lo)
	r.split(hi)
	i := r.find(lo)
	j := i
	for j < len(r.s) && start[T, P](&r.s[j]) < hi {
		j++
	}
	return i, j
}

// span returns the index range [i, j) of the ranges overlapping [lo, hi),
// without splitting.
func (r *rangeSet[T, P]) span(lo, hi uintptr) (int, int) {
	i := r.find(lo)
	j := i
	for j < len(r.s) && start[T, P](&r.s[j]) < hi {
		j++
	}
	return i, j
}

// insert adds v, which must not overlap any range.
func (r *rangeSet[T, P]) insert(v T) {
	i := r.find(start[T, P](&v))
	r.s = append(r.s, v)
	copy(r.s[i+1:], r.s[i:])
	r.s[i] = v
}

// remove deletes ranges [i, j).
func (r *rangeSet[T, P]) remove(i, j int) {
	r.s = append(r.s[:i], r.s[j:]...)
}

// free reports whether [lo, hi) overlaps no range.
func (r *rangeSet[T, P]) free(lo, hi uintptr) bool {
	i := r.find(lo)
	return i == len(r.s) || start[T, P](&r.s[i]) >= hi
}

// covered reports whether every address of [lo, hi) is in some range.
func (r *rangeSet[T, P]) covered(lo, hi uintptr) bool {
	for i := r.find(lo); lo < hi; i++ {
		if i == len(r.s) || start[T, P](&r.s[i]) > lo {
			return false
		}
		lo = end[T, P](&r.s[i])
	}
	return true
}
