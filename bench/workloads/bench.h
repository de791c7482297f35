/*
 * bench.h: the measuring loop every in-container micro-benchmark shares.
 *
 * A program is run as `PROGRAM ITERATIONS BUDGET_MS`. It repeats its operation
 * ITERATIONS times, or stops early once BUDGET_MS have passed: a runtime that
 * traps every system call through ptrace (55 us each) would otherwise need
 * minutes for the million iterations a native run finishes in 0.1 s. The
 * result is normalised per operation, so an early stop changes the precision,
 * not the figure.
 *
 * It prints one line, `RESULT <name> <value> <unit>`, which moat-bench reads.
 */
#ifndef MOAT_BENCH_H
#define MOAT_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct run {
	long iterations; /* asked for */
	long done;       /* completed so far */
	long pending;    /* handed out by the last run_next */
	uint64_t start_ns, deadline_ns;
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC goes through the vDSO in every runtime measured, so
	 * reading it between batches costs no trap. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline struct run run_begin(int argc, char **argv)
{
	struct run r = {0};
	long budget_ms;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ITERATIONS BUDGET_MS\n", argv[0]);
		exit(2);
	}
	r.iterations = atol(argv[1]);
	budget_ms = atol(argv[2]);
	if (r.iterations <= 0 || budget_ms <= 0) {
		fprintf(stderr, "%s: ITERATIONS and BUDGET_MS must be positive\n", argv[0]);
		exit(2);
	}
	r.start_ns = now_ns();
	r.deadline_ns = r.start_ns + (uint64_t)budget_ms * 1000000u;
	return r;
}

/*
 * run_next returns how many operations to do next (at most batch), or 0 when
 * done. Checking the clock once per batch keeps its cost out of the figure.
 */
static inline long run_next(struct run *r, long batch)
{
	r->done += r->pending;
	r->pending = 0;
	if (r->done >= r->iterations || (r->done > 0 && now_ns() >= r->deadline_ns))
		return 0;
	r->pending = r->iterations - r->done < batch ? r->iterations - r->done : batch;
	return r->pending;
}

/* run_report prints nanoseconds per operation multiplied by scale, in unit. */
static inline void run_report(struct run *r, const char *name, double scale, const char *unit)
{
	double per_op = (double)(now_ns() - r->start_ns) / (double)r->done;

	printf("RESULT %s %.6g %s\n", name, per_op * scale, unit);
	fprintf(stderr, "%s: %ld of %ld iterations\n", name, r->done, r->iterations);
}

/* fail reports a broken environment: the benchmark must not print a figure. */
static inline void fail(const char *what)
{
	perror(what);
	exit(1);
}

#endif
