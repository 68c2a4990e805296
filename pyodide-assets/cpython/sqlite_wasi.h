/* Force-included into SQLite's amalgamation for wasm32-wasi.
 *
 * SQLite 3.40's unix VFS wants POSIX record locks and ownership calls that
 * wasi-libc lacks. A strict guest is one single-threaded process that owns
 * its files, so locks are always granted and ownership/mode changes are
 * no-ops (sqlite_wasi.c). Later SQLite releases (3.41+) carry the same
 * accommodation upstream.
 */
#ifndef HERMES_SQLITE_WASI_H
#define HERMES_SQLITE_WASI_H
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef F_GETLK
#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#endif
#ifndef F_RDLCK
#define F_RDLCK 0
#define F_WRLCK 1
#define F_UNLCK 2
#endif

int hermes_sqlite_fcntl(int fd, int cmd, ...);
int hermes_sqlite_fchmod(int fd, mode_t mode);
int hermes_sqlite_fchown(int fd, uid_t uid, gid_t gid);
uid_t hermes_sqlite_geteuid(void);
#define fcntl hermes_sqlite_fcntl
#define fchmod hermes_sqlite_fchmod
#define fchown hermes_sqlite_fchown
#define geteuid hermes_sqlite_geteuid
#endif
