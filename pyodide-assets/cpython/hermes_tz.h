/* hermes-wasm-exec: the time zone interface that wasi-libc's <time.h> hides
 * ("WASI has no timezone tables"). The recipe links musl's time zone code
 * back in (wasi-libc-tz.patch, libhermes_tz.a), so CPython's time module can
 * use tzset(), tzname, timezone and daylight as on Linux. build.sh passes
 * this header to every compile with -include. */
#ifndef HERMES_TZ_H
#define HERMES_TZ_H
void tzset(void);
extern char *tzname[2];
extern long timezone;
extern int daylight;
#endif
