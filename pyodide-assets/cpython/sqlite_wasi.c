/* The POSIX calls SQLite's unix VFS needs and wasi-libc lacks (see
 * sqlite_wasi.h). wasi-libc's own fcntl knows only F_GETFD/F_SETFD/F_GETFL/
 * F_SETFL and fails lock commands with EINVAL, which SQLite would report as
 * an I/O error on the first write. */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/types.h>

#define F_GETLK 5
#define F_SETLK 6
#define F_SETLKW 7
#define F_UNLCK 2

int hermes_sqlite_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    switch (cmd) {
    case F_GETLK: {
        struct flock *lk = va_arg(ap, struct flock *);
        va_end(ap);
        lk->l_type = F_UNLCK; /* nobody else holds a lock */
        return 0;
    }
    case F_SETLK:
    case F_SETLKW:
        va_end(ap);
        return 0; /* granted: the guest is the only process */
    default: {
        int arg = va_arg(ap, int);
        va_end(ap);
        return fcntl(fd, cmd, arg);
    }
    }
}

int hermes_sqlite_fchmod(int fd, mode_t mode) { (void)fd; (void)mode; return 0; }
int hermes_sqlite_fchown(int fd, uid_t uid, gid_t gid) { (void)fd; (void)uid; (void)gid; return 0; }
/* Not root: SQLite then never tries to change a file's owner. */
uid_t hermes_sqlite_geteuid(void) { return 1000; }
