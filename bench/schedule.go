package bench

// Step is one run of a workload in the order the runner follows.
type Step struct {
	Runtime int // index into the session's runtimes
	Round   int // 0 is the warm-up, whose figure is discarded
}

// Schedule orders runs of n runtimes interleaved, A B C A B C ...: a warm-up
// round, then runs rounds. Interleaving spreads any slow phase of the machine
// (another build, a cache flush) over all runtimes instead of charging it to
// the one that happened to run then.
func Schedule(runtimes, runs int) []Step {
	var steps []Step
	for round := 0; round <= runs; round++ {
		for rt := 0; rt < runtimes; rt++ {
			steps = append(steps, Step{Runtime: rt, Round: round})
		}
	}
	return steps
}
