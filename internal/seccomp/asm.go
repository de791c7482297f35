package seccomp

import "fmt"

// label names a place in a program being assembled; next is the
// instruction after a jump.
type label int

const next label = -1

// assembler lays out a program with jumps to labels. A conditional jump
// reaches at most 255 instructions; one that must reach further jumps to
// an unconditional jump (whose reach is 32 bits) placed right after it.
type assembler struct {
	insns  []pending
	labels []int // label -> index in insns where it is bound; -1 unbound
}

type pending struct {
	Insn
	jt, jf label // conditional targets; Ja uses jt
	isJump bool
}

func (a *assembler) newLabel() label {
	a.labels = append(a.labels, -1)
	return label(len(a.labels) - 1)
}

func (a *assembler) bind(l label) { a.labels[l] = len(a.insns) }

func (a *assembler) emit(in Insn) { a.insns = append(a.insns, pending{Insn: in}) }

// jump emits a conditional jump with code and k (or an unconditional one,
// code Ja, to jt).
func (a *assembler) jump(code uint16, k uint32, jt, jf label) {
	a.insns = append(a.insns, pending{Insn: Insn{Code: code, K: k}, jt: jt, jf: jf, isJump: true})
}

// assemble resolves the labels. Conditional jumps too far for 8 bits get
// trampolines, which move what follows, so layout repeats until stable.
func (a *assembler) assemble() ([]Insn, error) {
	far := make([]bool, len(a.insns)) // jumps laid out with trampolines
	for {
		pos := make([]int, len(a.insns)+1) // index -> position in the output
		p := 0
		for i := range a.insns {
			pos[i] = p
			p++
			if far[i] {
				p += 2
			}
		}
		pos[len(a.insns)] = p
		target := func(i int, l label) (int, error) {
			if l == next {
				return pos[i+1], nil
			}
			if a.labels[l] < 0 {
				return 0, fmt.Errorf("seccomp: jump to an unbound label")
			}
			return pos[a.labels[l]], nil
		}
		out := make([]Insn, 0, p)
		grew := false
		for i, in := range a.insns {
			if !in.isJump {
				out = append(out, in.Insn)
				continue
			}
			t, err := target(i, in.jt)
			if err != nil {
				return nil, err
			}
			here := pos[i]
			if in.Code == Ja {
				out = append(out, Stmt(Ja, uint32(t-here-1)))
				continue
			}
			f, err := target(i, in.jf)
			if err != nil {
				return nil, err
			}
			if t < here+1 || f < here+1 {
				return nil, fmt.Errorf("seccomp: backward jump")
			}
			if !far[i] {
				if t-here-1 > 255 || f-here-1 > 255 {
					far[i], grew = true, true
					continue
				}
				out = append(out, Jump(in.Code, in.K, uint8(t-here-1), uint8(f-here-1)))
				continue
			}
			// jcond +0 / +1, then "ja t" and "ja f".
			out = append(out, Jump(in.Code, in.K, 0, 1),
				Stmt(Ja, uint32(t-(here+1)-1)), Stmt(Ja, uint32(f-(here+2)-1)))
		}
		if !grew {
			return out, nil
		}
	}
}
