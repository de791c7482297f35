/*
 * time_adjtimex: reading the kernel clock's NTP state.
 *
 * ntpd, chronyd, systemd-timesyncd and `timedatectl` read the clock's
 * discipline with adjtimex (modes 0) before anything else, and a program
 * asks whether the clock is synchronised the same way; an unprivileged
 * caller must be able to read and must not be able to set.
 * Checks: adjtimex and clock_adjtime(CLOCK_REALTIME) with modes 0 return
 * the clock state (TIME_ERROR exactly when STA_UNSYNC is set), the time
 * of day, a tick of 10000 µs at USER_HZ 100, a tolerance of 500 ppm and
 * error bounds within the phase limit; ADJ_OFFSET_SS_READ reads too, with
 * no pending adjustment; without CAP_SYS_TIME every mode that sets
 * (ADJ_OFFSET, ADJ_FREQUENCY, ADJ_TICK, ADJ_SETOFFSET, ADJ_OFFSET_SINGLESHOT)
 * is EPERM; ADJ_ADJTIME without the single-shot bit is EINVAL; EFAULT for a
 * bad buffer (before clock_adjtime looks at the clock); clock_adjtime of
 * the other clocks and of a CPU clock is EOPNOTSUPP, of an unknown clock or
 * a descriptor that is no clock EINVAL.
 *
 * Natively the program runs as root: it drops CAP_SYS_TIME from its
 * effective set first, so that nothing here can change the host's clock.
 */
// covers: adjtimex clock_adjtime
#include "check.h"

#include <stdint.h>
#include <sys/time.h>
#include <sys/timex.h>

/* drop_sys_time takes CAP_SYS_TIME out of the effective set. */
static void drop_sys_time(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	CHECK_OK(syscall(SYS_capget, &h, d));
	d[CAP_SYS_TIME / 32].effective &= ~(1u << (CAP_SYS_TIME % 32));
	CHECK_OK(syscall(SYS_capset, &h, d));
}

static void check_state(long r, const struct timex *tx)
{
	struct timeval now;

	gettimeofday(&now, NULL);
	CHECK(r >= TIME_OK && r <= TIME_ERROR);
	CHECK_EQ(r == TIME_ERROR, (tx->status & (STA_UNSYNC | STA_CLOCKERR)) != 0);
	CHECK_EQ(tx->tick, 10000);
	CHECK_EQ(tx->tolerance, 500L << 16);
	CHECK(tx->maxerror >= 0 && tx->maxerror <= 16000000);
	CHECK(tx->esterror >= 0 && tx->esterror <= 16000000);
	CHECK(tx->precision >= 1);
	CHECK(tx->time.tv_sec >= now.tv_sec - 2 && tx->time.tv_sec <= now.tv_sec);
}

static long adjtimex_modes(unsigned modes)
{
	struct timex tx = { 0 };

	tx.modes = modes;
	tx.tick = 10000;
	return syscall(SYS_adjtimex, &tx);
}

int main(int argc, char **argv)
{
	struct timex tx;
	long r;
	int id;

	check_init(argc, argv);
	drop_sys_time();

	memset(&tx, 0, sizeof(tx));
	r = syscall(SYS_adjtimex, &tx);
	check_state(r, &tx);
	memset(&tx, 0, sizeof(tx));
	r = syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx);
	check_state(r, &tx);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET_SS_READ;
	tx.offset = 12345;
	r = syscall(SYS_adjtimex, &tx);
	check_state(r, &tx);
	CHECK_EQ(tx.offset, 0);

	CHECK_ERR(adjtimex_modes(ADJ_OFFSET), EPERM);
	CHECK_ERR(adjtimex_modes(ADJ_FREQUENCY), EPERM);
	CHECK_ERR(adjtimex_modes(ADJ_TICK), EPERM);
	CHECK_ERR(adjtimex_modes(ADJ_SETOFFSET), EPERM);
	CHECK_ERR(adjtimex_modes(ADJ_STATUS), EPERM);
	CHECK_ERR(adjtimex_modes(ADJ_OFFSET_SINGLESHOT), EPERM);
	CHECK_ERR(adjtimex_modes(0x8000), EINVAL);
	CHECK_ERR(adjtimex_modes(0xa000), EINVAL);

	CHECK_ERR(syscall(SYS_adjtimex, (void *)8), EFAULT);
	CHECK_ERR(syscall(SYS_clock_adjtime, CLOCK_REALTIME, (void *)8), EFAULT);
	CHECK_ERR(syscall(SYS_clock_adjtime, CLOCK_MONOTONIC, (void *)8), EFAULT);
	CHECK_ERR(syscall(SYS_clock_adjtime, 12, (void *)8), EFAULT);

	for (id = 1; id <= CLOCK_TAI; id++) {
		memset(&tx, 0, sizeof(tx));
		CHECK_ERR(syscall(SYS_clock_adjtime, id == 10 ? 1 : id, &tx), EOPNOTSUPP);
	}
	CHECK_ERR(syscall(SYS_clock_adjtime, 10, &tx), EINVAL);
	CHECK_ERR(syscall(SYS_clock_adjtime, 12, &tx), EINVAL);
	CHECK_ERR(syscall(SYS_clock_adjtime, 1000, &tx), EINVAL);
	/* The process's own CPU clock (pid 0, CPUCLOCK_SCHED). */
	CHECK_ERR(syscall(SYS_clock_adjtime, (clockid_t)((~0u << 3) | 2), &tx), EOPNOTSUPP);
	/* CLOCKFD of descriptor 0, which is no clock. */
	CHECK_ERR(syscall(SYS_clock_adjtime, (clockid_t)((~0u << 3) | 3), &tx), EINVAL);
	return check_finish();
}
