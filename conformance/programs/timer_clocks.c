/*
 * timer_clocks: clock_nanosleep on every clock id Linux numbers.
 *
 * Checks, with raw clock_nanosleep: CLOCK_REALTIME, CLOCK_MONOTONIC,
 * CLOCK_BOOTTIME and CLOCK_TAI sleep 2 ms relative and to now + 2 ms on
 * that clock absolute (the kernel's timers/nanosleep selftest does the
 * same), waking not early by that clock and within a second of wall time;
 * unknown bits of flags are ignored; the clocks with no sleep
 * (CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, the coarse clocks) fail
 * with EOPNOTSUPP before the time is read, so even a bad time gives
 * EOPNOTSUPP; the alarm clocks check the time first (EINVAL), then sleep
 * where there is an RTC and CAP_WAKE_ALARM, else fail with EPERM or, with
 * no RTC, EOPNOTSUPP; 10 (once CLOCK_SGI_CYCLE) and ids past CLOCK_TAI
 * are EINVAL, as is a bad time on a clock that sleeps.
 */
// covers: clock_nanosleep clock_gettime
#include "check.h"

#include <time.h>

static long sleep_on(int clock, int flags, const struct timespec *ts)
{
	long r = syscall(SYS_clock_nanosleep, clock, flags, ts, NULL);
	return r < 0 ? errno : 0;
}

static struct timespec plus_ns(struct timespec t, long ns)
{
	t.tv_nsec += ns;
	while (t.tv_nsec >= 1000000000) {
		t.tv_nsec -= 1000000000;
		t.tv_sec++;
	}
	return t;
}

static int before(struct timespec a, struct timespec b)
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

/* sleeps checks that clock sleeps 2 ms both ways, with flags' extra bits. */
static void sleeps(int clock, int extra)
{
	struct timespec now, target, rel = {0, 2000000};
	long long t0;

	CHECK_OK(clock_gettime(clock, &now));
	target = plus_ns(now, 2000000);
	t0 = check_now_ns();
	CHECK_EQ(sleep_on(clock, TIMER_ABSTIME | extra, &target), 0);
	CHECK(check_now_ns() - t0 < 1000000000LL);
	CHECK_OK(clock_gettime(clock, &now));
	CHECK(!before(now, target));

	CHECK_OK(clock_gettime(clock, &now));
	target = plus_ns(now, 2000000);
	t0 = check_now_ns();
	CHECK_EQ(sleep_on(clock, extra, &rel), 0);
	CHECK(check_now_ns() - t0 >= 2000000LL);
	CHECK(check_now_ns() - t0 < 1000000000LL);
	CHECK_OK(clock_gettime(clock, &now));
	CHECK(!before(now, target));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	struct timespec rel = {0, 2000000}, bad = {0, 1000000000};

	sleeps(CLOCK_REALTIME, 0);
	sleeps(CLOCK_MONOTONIC, 0);
	sleeps(CLOCK_BOOTTIME, 0);
	sleeps(CLOCK_TAI, 0);
	sleeps(CLOCK_TAI, 4);
	CHECK_EQ(sleep_on(CLOCK_TAI, 0, &bad), EINVAL);
	CHECK_EQ(sleep_on(CLOCK_MONOTONIC, TIMER_ABSTIME, &bad), EINVAL);

	int none[] = {CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE};
	for (unsigned i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		CHECK_EQ(sleep_on(none[i], 0, &rel), EOPNOTSUPP);
		CHECK_EQ(sleep_on(none[i], TIMER_ABSTIME, &rel), EOPNOTSUPP);
		CHECK_EQ(sleep_on(none[i], 0, &bad), EOPNOTSUPP);
	}

	int alarms[] = {CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM};
	for (unsigned i = 0; i < 2; i++) {
		CHECK_EQ(sleep_on(alarms[i], 0, &bad), EINVAL);
		long r = sleep_on(alarms[i], 0, &rel);
		CHECK(r == 0 || r == EPERM || r == EOPNOTSUPP);
	}

	int unknown[] = {10, 12, 13, 16, 100};
	for (unsigned i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		CHECK_EQ(sleep_on(unknown[i], 0, &rel), EINVAL);

	return check_finish();
}
