package regrtest

import (
	"regexp"
	"sort"
	"strings"
)

// The classes of a module that passes natively but not in strict mode.
const (
	ClassThreads    = "no threads"
	ClassProcesses  = "no processes"
	ClassSockets    = "no sockets"
	ClassSignals    = "no signals"
	ClassFS         = "file system"
	ClassWASI       = "no such OS call"
	ClassBuild      = "build choice"
	ClassStack      = "stack depth"
	ClassTimeout    = "timeout"
	ClassMemory     = "memory"
	ClassOther      = "other"
	ClassNativeFail = "fails natively"
)

// classOrder is the order of the classes in the summary.
var classOrder = []string{ClassThreads, ClassProcesses, ClassSockets, ClassSignals, ClassFS, ClassWASI,
	ClassBuild, ClassStack, ClassTimeout, ClassMemory, ClassOther}

// classMeaning says what each class stands for, in the table's legend.
var classMeaning = map[string]string{
	ClassThreads:   "needs real threads (strict mode runs threads one after another; no `_thread` locks across them)",
	ClassProcesses: "needs subprocesses, fork or multiprocessing (WASI preview 1 has no processes; the harness enables no tools, so `subprocess` cannot reach the host's terminal)",
	ClassSockets:   "needs sockets or the network (WASI preview 1 has no socket())",
	ClassSignals:   "needs signals (none is delivered; no alarm, setitimer or kill)",
	ClassFS:        "the sandbox's file system: permissions and modes, symlinks, hard links, /dev, /proc, FIFOs, the read-only test package",
	ClassWASI:      "an OS call or module WASI preview 1 lacks (users and groups, mmap, fcntl, terminals, resource limits, umask, ...)",
	ClassBuild:     "a build choice: a library or C module not linked in (OpenSSL, ctypes/libffi, curses, readline, Tk, gdbm, CPython's C test modules `_testcapi` and friends)",
	ClassStack:     "the WebAssembly stack: deep recursion ends sooner than natively",
	ClassTimeout:   "ran past the time limit (no result)",
	ClassMemory:    "ran out of memory (MemoryError or the instance's memory limit)",
	ClassOther:     "none of the above: see the note",
}

// pattern maps failure text to a class. The first pattern that matches a
// text classes it; notes name what the pattern recognised.
type pattern struct {
	class string
	re    *regexp.Regexp
}

// patterns is the classifier: every rule in one table, tried in order on
// the module's error, its module-level skip reason, and each failure's
// last traceback line (then, when that line matches nothing, the failure's
// traceback lines).
var patterns = []pattern{
	// Build choices first: "No module named '_ssl'" is a build choice
	// even where a socket is mentioned too.
	{ClassBuild, regexp.MustCompile(`(?i)No module named '?(_?ssl|_?ctypes|_?curses|_curses_panel|readline|_?tkinter|idlelib|turtle|turtledemo|_hashlib|_gdbm|_dbm|_uuid|ensurepip|pydoc_data|lib2to3|_test\w*|_xx\w*|xx\w*|_ctypes_test|_testbuffer|_testcapi|_testinternalcapi|_testlimitedcapi|_testmultiphase|_testsinglephase|_testclinic|_testclinic_limited|_testimportmultiple|_testexternalinspection)'?`)},
	{ClassBuild, regexp.MustCompile(`(?i)requires? (_testcapi|_testinternalcapi|_testlimitedcapi|_testbuffer|_testmultiphase|_testsinglephase|ctypes|OpenSSL|ssl|curses|readline|tkinter|_tkinter|gdbm|dbm\.gnu|dbm\.ndbm|zlib)|OpenSSL|\bssl\b|hashlib.*(unsupported|not available)|unsupported hash type|scrypt|_testcapi|_testinternalcapi|_testlimitedcapi|ctypes|\bcurses\b|readline|tkinter|gdbm|\bndbm\b`)},
	{ClassMemory, regexp.MustCompile(`MemoryError|out of memory|memory limit|Cannot allocate memory`)},
	{ClassStack, regexp.MustCompile(`RecursionError|call stack exhausted|stack overflow|maximum recursion depth`)},
	{ClassThreads, regexp.MustCompile(`(?i)can't start new thread|start_new_thread|requires threading support|threading support|\bthreads?\b|deadlock|_thread|threading|concurrent\.futures|ThreadPoolExecutor|\block(ed)?\b.*release|test\.support\.threading_helper|RLock|Condition|Barrier|Semaphore`)},
	{ClassProcesses, regexp.MustCompile(`(?i)subprocess|requires subprocess support|\bfork\b|os\.fork|forkserver|multiprocessing|_posixsubprocess|posix_spawn|spawnv|execv|os\.exec|waitpid|os\.wait|script_helper|assert_python_(ok|failure)|run_python_until_end|spawn_python|ProcessPoolExecutor|os\.system|os\.popen|os\.kill|getppid|has no attribute '(fork|wait|waitpid|system|popen|kill|killpg|execv|spawnv|posix_spawn)'`)},
	{ClassSockets, regexp.MustCompile(`(?i)socket|network|getaddrinfo|gethostbyname|gethostname|Address family|requires_working_socket|\bselect\b|selectors|ipv6|localhost|AF_INET|AF_UNIX|socketpair|\bssl\b|EAI_|urlopen|connection refused`)},
	{ClassSignals, regexp.MustCompile(`(?i)\bsignal\b|\bsignals\b|alarm|setitimer|SIGALRM|SIGINT|SIGTERM|SIGUSR|sigaction|pthread_kill|raise_signal|faulthandler.*(dump_traceback_later|register)`)},
	{ClassWASI, regexp.MustCompile(`(?i)No module named '?(pwd|grp|mmap|fcntl|termios|tty|pty|resource|syslog|_posixshmem|_multiprocessing|_interpreters|_interpchannels|_interpqueues)'?|has no attribute '(umask|getuid|geteuid|getgid|getegid|getgroups|setuid|getpwuid|getlogin|nice|getpriority|sched_\w+|getloadavg|openpty|ttyname|ctermid|mkfifo|mknod|sysconf|confstr|pathconf|fpathconf|statvfs|fstatvfs|uname|times|getrusage|setrlimit|getrlimit|dup2?|pipe2?|get_blocking|set_blocking|get_inheritable|set_inheritable|chroot|chown|fchown|lchown|fchmod|lchmod|chflags|lchflags|setsid|getsid|getpgid|setpgid|tcgetpgrp|isatty|device_encoding|getpgrp|sync|fsync|fdatasync|truncate|ftruncate|posix_fallocate|posix_fadvise|memfd_create|eventfd|splice|copy_file_range|sendfile|readv|writev|pread|pwrite|preadv|pwritev|link|lockf|major|minor|makedev|getxattr|setxattr|listxattr|removexattr|login_tty|unshare|setns|pidfd_open|waitstatus_to_exitcode)'|requires (os\.)?\w+\(\)|users and groups|Function not implemented|ENOSYS|Errno 52|Errno 58|not supported on this platform|Operation not supported`)},
	{ClassFS, regexp.MustCompile(`(?i)PermissionError|Permission denied|Errno 2 |Errno 13|Errno 63|Errno 69|Errno 76|Operation not permitted|Read-only file system|symlink|symbolic link|hard link|os\.link|/dev/|/proc/|chmod|st_mode|S_IMODE|umask|mkfifo|FileNotFoundError|NotADirectoryError|IsADirectoryError|FileExistsError|No such file or directory|Not a directory|Bad file descriptor|Errno 8 |inode|st_nlink|st_ino|st_dev|mtime|utime|hardlink|fifo|getcwd|os\.stat|lstat|os\.path\.realpath|realpath|samefile|sameopenfile|os\.open|O_NOFOLLOW|O_CLOEXEC|O_EXCL|O_DIRECTORY|scandir|sys\.executable|__pycache__|\.pyc`)},
}

// classifyText gives the class of a text, or "" when no pattern
// matches.
func classifyText(text string) string {
	for _, p := range patterns {
		if p.re.MatchString(text) {
			return p.class
		}
	}
	return ""
}

// Classify gives the class of a module that passes natively but not in
// strict mode (o is its strict outcome), and a note: the text the class
// comes from.
func Classify(o Outcome) (class, note string) {
	switch {
	case o.Status == StatusTimeout:
		return ClassTimeout, ""
	case o.Status == StatusCrash:
		if c := classifyText(o.Error); c != "" {
			return c, "crash: " + lastLines(o.Error, 1)
		}
		return ClassOther, "crash: " + lastLines(o.Error, 1)
	case o.Error != "":
		if c := classifyText(o.Error); c != "" {
			return c, lastLines(o.Error, 1)
		}
		return ClassOther, lastLines(o.Error, 1)
	case o.ModuleSkip != "" && o.Failed == 0:
		if c := classifyText(o.ModuleSkip); c != "" {
			return c, "skipped: " + o.ModuleSkip
		}
		return ClassOther, "skipped: " + o.ModuleSkip
	}
	// Failed tests: each failure's last line, counted, votes for a class;
	// a line no pattern knows is looked up in the failures' tracebacks.
	votes := map[string]int{}
	lines := map[string]string{}
	for _, e := range o.Exceptions {
		c := classifyText(e.Line)
		if c == "" {
			for _, f := range o.Failures {
				if strings.HasSuffix(strings.TrimSpace(f), e.Line) {
					if c = classifyText(f); c != "" {
						break
					}
				}
			}
		}
		if c == "" {
			c = ClassOther
		}
		votes[c] += e.Count
		if _, ok := lines[c]; !ok {
			lines[c] = e.Line
		}
	}
	if len(votes) == 0 {
		for _, f := range o.Failures {
			c := classifyText(f)
			if c == "" {
				c = ClassOther
			}
			votes[c]++
			if _, ok := lines[c]; !ok {
				lines[c] = lastLines(f, 1)
			}
		}
	}
	if len(votes) == 0 {
		return ClassOther, "failed tests, no failure text"
	}
	classes := make([]string, 0, len(votes))
	for c := range votes {
		classes = append(classes, c)
	}
	// The class with the most failures; among equals, the first in
	// classOrder.
	rank := map[string]int{}
	for i, c := range classOrder {
		rank[c] = i
	}
	sort.Slice(classes, func(i, j int) bool {
		if votes[classes[i]] != votes[classes[j]] {
			return votes[classes[i]] > votes[classes[j]]
		}
		return rank[classes[i]] < rank[classes[j]]
	})
	return classes[0], lines[classes[0]]
}
