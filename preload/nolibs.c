/*
 * nolibs.c — the few functions of libm and libgcc_s that the private
 * jemalloc references, defined here (hidden) so that the library needs
 * neither: loading them costs every process that preloads us about a
 * quarter of a millisecond (libgcc_s runs a constructor that asks the CPU
 * what it is, which traps to the hypervisor in a VM; libm is mapped and
 * relocated), and only jemalloc's heap profiling (opt.prof, off unless
 * MALLOC_CONF turns it on) calls them.
 *
 *   exp, log, round   correct to a few ulp for finite arguments (prof's
 *                     sampling intervals need no more)
 *   _Unwind_*         no backtrace: a profile of the library's own
 *                     allocations would show no stacks
 */
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------ libm */

double exp(double x);
double log(double x);
double round(double x);

#define LN2	0.69314718055994530942

/* 2^k as a double, for -1022 <= k <= 1023. */
static double pow2(int k)
{
	uint64_t bits = (uint64_t)(k + 1023) << 52;
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

double exp(double x)
{
	double r, term, sum;
	int k, i;

	if (x != x)
		return x;
	if (x > 709.0)
		return pow2(1023) * 2.0;	/* +inf */
	if (x < -745.0)
		return 0.0;
	/* x = k ln2 + r with |r| <= ln2/2; exp(r) by its series. */
	k = (int)(x / LN2 + (x < 0 ? -0.5 : 0.5));
	r = x - k * LN2;
	for (sum = 1.0, term = 1.0, i = 1; i < 20; i++) {
		term *= r / i;
		sum += term;
	}
	if (k < -1022) {
		sum *= pow2(-1022);
		k += 1022;
	}
	if (k > 1023) {
		sum *= 2.0;
		k--;
	}
	return sum * pow2(k);
}

double log(double x)
{
	double m, s, s2, term, sum;
	uint64_t bits;
	int e, i;

	if (x != x || x < 0)
		return (x - x) / (x - x);	/* NaN */
	if (x == 0)
		return -1.0 / 0.0;
	if (x > 1.7976931348623157e308)
		return x;
	e = 0;
	while (x < 2.2250738585072014e-308) {	/* subnormal: scale up first */
		x *= 4503599627370496.0;	/* 2^52 */
		e -= 52;
	}
	memcpy(&bits, &x, sizeof(bits));
	e += (int)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & ((1ULL << 52) - 1)) | (1023ULL << 52);
	memcpy(&m, &bits, sizeof(m));	/* x = m 2^e, 1 <= m < 2 */
	if (m > 1.4142135623730951) {
		m /= 2;
		e++;
	}
	/* log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172. */
	s = (m - 1) / (m + 1);
	s2 = s * s;
	for (sum = 0, term = s, i = 1; i < 40; i += 2) {
		sum += term / i;
		term *= s2;
	}
	return 2 * sum + e * LN2;
}

double round(double x)
{
	double t;

	if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
		return x;	/* already whole (or NaN, inf) */
	t = (double)(int64_t)x;
	if (x - t >= 0.5)
		t += 1;
	else if (t - x >= 0.5)
		t -= 1;
	return t == 0 && x < 0 ? -0.0 : t;
}

/* ------------------------------------------------------------ libgcc_s */

int _Unwind_Backtrace(void *fn, void *arg);
unsigned long _Unwind_GetIP(void *ctx);

int _Unwind_Backtrace(void *fn, void *arg)
{
	(void)fn;
	(void)arg;
	return 5;	/* _URC_END_OF_STACK: no frames */
}

unsigned long _Unwind_GetIP(void *ctx)
{
	(void)ctx;
	return 0;
}
