package seccomp

// cachedCalls is how many call numbers a chain remembers answers for: every
// x86-64 call is below it.
const cachedCalls = 512

// MaxPathInsns bounds the instructions of a chain, each filter counting
// four more than its length (Linux's MAX_INSNS_PER_PATH).
const MaxPathInsns = 1 << 15

// Chain is the filters a thread carries, newest first, as seccomp(2)
// stacks them; a chain never changes, so threads share it. Nil is no
// filter.
//
// Most calls' answers depend only on their number (a profile allows or
// denies read whatever its arguments): a chain works those out once, when
// it is made, and answers them from a table, so that a filtered call costs
// a look-up, not a run of every program.
type Chain struct {
	prog  []Insn
	prev  *Chain
	insns int // the whole chain's, as MaxPathInsns counts them

	known  [cachedCalls / 64]uint64 // numbers whose answer is in answer
	answer [cachedCalls]uint32
}

// Push returns the chain of prog (which passed Check) on top of c, or
// false if it would be longer than MaxPathInsns.
func (c *Chain) Push(prog []Insn) (*Chain, bool) {
	n := &Chain{prog: prog, prev: c, insns: len(prog) + 4}
	if c != nil {
		n.insns += c.insns
	}
	if n.insns > MaxPathInsns {
		return nil, false
	}
	d := Data{Arch: ArchX86_64}
	for nr := range int32(cachedCalls) {
		d.Nr = nr
		ret, ok := run(prog, &d, true)
		if !ok || (c != nil && !c.isKnown(nr)) {
			continue
		}
		if c != nil && Precedes(c.answer[nr], ret) {
			ret = c.answer[nr]
		}
		n.answer[nr] = ret
		n.known[nr/64] |= 1 << (nr % 64)
	}
	return n, true
}

func (c *Chain) isKnown(nr int32) bool { return c.known[nr/64]&(1<<(nr%64)) != 0 }

// Evaluate returns the chain's answer to the call d: every filter's, the
// one that takes precedence.
func (c *Chain) Evaluate(d *Data) uint32 {
	if d.Arch == ArchX86_64 && d.Nr >= 0 && d.Nr < cachedCalls && c.isKnown(d.Nr) {
		return c.answer[d.Nr]
	}
	ret := uint32(ActAllow)
	for f := c; f != nil; f = f.prev {
		if r := Run(f.prog, d); Precedes(r, ret) {
			ret = r
		}
	}
	return ret
}

// Len is the number of filters in the chain.
func (c *Chain) Len() int {
	n := 0
	for ; c != nil; c = c.prev {
		n++
	}
	return n
}

// Contains reports whether other is c or one of the chains c was pushed
// on (so that a thread with chain c may replace other's: TSYNC's rule).
func (c *Chain) Contains(other *Chain) bool {
	for ; c != nil; c = c.prev {
		if c == other {
			return true
		}
	}
	return other == nil
}
