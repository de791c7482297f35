package mm

import "errors"

// errSpillHost says the host refused a write to the spill; the caller
// writes the chunk in memory instead, as a chunk the spill cannot take
// stays there.
var errSpillHost = errors.New("spill: the host refused a write")

// maxOutRun bounds the chunks one host write to the spill carries (1 MiB),
// so that what to undo if it fails fits in an array on the stack.
const maxOutRun = 16

// zeroPage is what the rest of a page a write only partly covers is
// filled with in the spill, when the page held no data before.
var zeroPage [PageSize]byte

// outSeg is one chunk's part of a write straight to the spill: what to
// undo if the host refuses it.
type outSeg struct {
	idx   int64
	o     *spilled
	added uint16 // the pages the write made hold data
	fresh bool   // the slot was taken for this write
}

// outRun is the part of a write, over neighbouring slots, that one host
// write carries: b[start:end] at host in the spill file.
type outRun struct {
	segs       [maxOutRun]outSeg
	n          int
	start, end int
	host       int64
}

// writeOutLocked writes b at off straight to the spill, into the slots of
// the chunks it falls in for as long as they are not in memory: a spilled
// chunk's slot is written in place, a hole gets a slot of its own. It
// returns how many bytes it wrote and, when it stopped before the first
// chunk in memory or the end of b, the account's refusal (after writing
// what fits) or errSpillHost (the bytes of the refused host write are not
// counted and their pages hold no data).
func (p *FilePages) writeOutLocked(b []byte, off int64) (int, error) {
	var run outRun
	var stop error
	done := 0
	for done < len(b) {
		pos := off + int64(done)
		idx, in := pos/ChunkSize, pos%ChunkSize
		if p.chunks[idx] != nil {
			break
		}
		o, fresh := p.out[idx], false
		if o == nil {
			o, fresh = &spilled{slot: p.spill.take()}, true
			p.out[idx] = o
		}
		seg := outSeg{idx: idx, o: o, fresh: fresh}
		before := o.used
		k, markErr := p.markFitLocked(&o.used, in, min(int64(len(b)-done), ChunkSize-in))
		seg.added = o.used &^ before
		if k == 0 {
			p.undoOutLocked(seg)
			stop = markErr
			break
		}
		host := o.slot*ChunkSize + in
		partial := partialPages(seg.added, in, k)
		if run.n > 0 && (partial || run.n == maxOutRun || host != run.host+int64(run.end-run.start)) {
			if err := p.flushOutLocked(&run, b); err != nil {
				p.undoOutLocked(seg)
				return run.start, err
			}
		}
		if partial && p.zeroPartialLocked(seg.added, host, in, k) != nil {
			p.undoOutLocked(seg)
			return done, errSpillHost
		}
		if run.n == 0 {
			run.start, run.host = done, host
		}
		run.segs[run.n] = seg
		run.n++
		done += int(k)
		run.end = done
		if markErr != nil {
			stop = markErr // what fits is written: the rest is refused
			break
		}
	}
	if err := p.flushOutLocked(&run, b); err != nil {
		return run.start, err
	}
	return done, stop
}

// partialPages reports whether [in, in+n) of a chunk covers only part of
// its first or last page, and that page is among added (held no data
// before): the rest of it must then read as zeros.
func partialPages(added uint16, in, n int64) bool {
	if n == 0 {
		return false
	}
	head, tail := in/PageSize, (in+n-1)/PageSize
	return (in%PageSize != 0 && added&(1<<head) != 0) ||
		((in+n)%PageSize != 0 && added&(1<<tail) != 0)
}

// zeroPartialLocked fills with zeros the parts of the first and last pages
// of [in, in+n) (at host in the spill file) that the write leaves out,
// where those pages held no data: a slot's unused pages may hold anything.
func (p *FilePages) zeroPartialLocked(added uint16, host, in, n int64) error {
	head, tail := in/PageSize, (in+n-1)/PageSize
	if lead := in % PageSize; lead != 0 && added&(1<<head) != 0 {
		if err := p.spill.write(zeroPage[:lead], host-lead); err != nil {
			return err
		}
	}
	if end := in + n; end%PageSize != 0 && added&(1<<tail) != 0 {
		if err := p.spill.write(zeroPage[end%PageSize:], host+n); err != nil {
			return err
		}
	}
	return nil
}

// flushOutLocked makes the host write of run (b is the write's data), or
// undoes its segments if the host refuses it.
func (p *FilePages) flushOutLocked(run *outRun, b []byte) error {
	if run.n == 0 {
		return nil
	}
	err := p.spill.write(b[run.start:run.end], run.host)
	if err != nil {
		for _, seg := range run.segs[:run.n] {
			p.undoOutLocked(seg)
		}
	}
	run.n = 0
	if err != nil {
		return errSpillHost
	}
	return nil
}

// undoOutLocked takes back what a write marked in seg's chunk, and the
// chunk's slot if the write took it.
func (p *FilePages) undoOutLocked(seg outSeg) {
	p.unmarkLocked(&seg.o.used, seg.added)
	if seg.fresh {
		delete(p.out, seg.idx)
		p.spill.release(seg.o.slot)
	}
}
