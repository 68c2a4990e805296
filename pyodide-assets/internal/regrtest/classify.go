package regrtest

import (
	"fmt"
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
	ClassNoSource   = "stdlib as .pyc"
	ClassStack      = "stack depth"
	ClassTimeout    = "timeout"
	ClassMemory     = "memory"
	ClassOther      = "other"
	ClassNativeFail = "fails natively"
)

// classOrder is the order of the classes in the summary.
var classOrder = []string{ClassThreads, ClassProcesses, ClassSockets, ClassSignals, ClassFS, ClassWASI,
	ClassBuild, ClassNoSource, ClassStack, ClassTimeout, ClassMemory, ClassOther}

// classMeaning says what each class stands for, in the table's legend.
var classMeaning = map[string]string{
	ClassThreads:   "needs real threads (strict mode runs threads one after another; CPython's tests see no threading support), or subinterpreters (built only with threads)",
	ClassProcesses: "needs subprocesses, fork or multiprocessing (WASI preview 1 has no processes; the harness enables no tools, so `subprocess` cannot reach the host's terminal)",
	ClassSockets:   "needs sockets or the network (WASI preview 1 has no socket())",
	ClassSignals:   "needs signals (none is delivered; no alarm, setitimer or kill)",
	ClassFS:        "the sandbox's file system: permissions and modes, symlinks, hard links, /dev, /proc, FIFOs, the disk limit (`disk_limit_mb`), read-only dirs on `sys.path` (unlinking a missing file there is EROFS, as on a read-only Linux mount), the cwd at `/`",
	ClassWASI:      "an OS call or module WASI preview 1 lacks (users and groups, mmap, fcntl, terminals, resource limits, umask, ...)",
	ClassBuild:     "a build choice: a library or C module not linked in (OpenSSL, ctypes/libffi, curses, readline, Tk, gdbm, CPython's C test modules `_testcapi` and friends, the frozen test package `__phello__`), a package left out of the zip (`ensurepip`, `pydoc_data`, `idlelib`), or the interpreter run with `-S`",
	ClassNoSource:  "the standard library is compiled `.pyc` in a zip, without its source: no source lines in tracebacks, `inspect.getsource`, `linecache` or `pdb` for its frames, `__file__` ends in `.pyc`, `sys._stdlib_dir` is None",
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
	{ClassBuild, regexp.MustCompile(`requires test modules|_testexternalinspection|xxlimited|pydoc_data|invoked with -S|__phello__`)},
	{ClassBuild, regexp.MustCompile(`(?i)requires? (_testcapi|_testinternalcapi|_testlimitedcapi|_testbuffer|_testmultiphase|_testsinglephase|ctypes|OpenSSL|ssl|curses|readline|tkinter|_tkinter|gdbm|dbm\.gnu|dbm\.ndbm|zlib)|OpenSSL|\bssl\b|hashlib.*(unsupported|not available)|unsupported hash type|scrypt|_testcapi|_testinternalcapi|_testlimitedcapi|ctypes|\bcurses\b|readline|tkinter|gdbm|\bndbm\b`)},
	{ClassNoSource, regexp.MustCompile(`could not get source code|stdlib_dir|python3\d+\.zip/[\w/]+\.pyc`)},
	{ClassMemory, regexp.MustCompile(`MemoryError|out of memory|memory limit|Cannot allocate memory`)},
	{ClassFS, regexp.MustCompile(`(?i)No space left on device|largefile|Read-only file system`)},
	{ClassStack, regexp.MustCompile(`RecursionError|call stack exhausted|stack overflow|maximum recursion depth`)},
	{ClassThreads, regexp.MustCompile(`(?i)can't start new thread|_interpreters|_interpchannels|_interpqueues|start_new_thread|requires threading support|threading support|\bthreads?\b|deadlock|_thread|threading|concurrent\.futures|ThreadPoolExecutor|\block(ed)?\b.*release|test\.support\.threading_helper|RLock|Condition|Barrier|Semaphore`)},
	{ClassProcesses, regexp.MustCompile(`(?i)subprocess|requires subprocess support|\bfork\b|os\.fork|forkserver|multiprocessing|_posixsubprocess|posix_spawn|spawnv|execv|os\.exec|waitpid|os\.wait|script_helper|assert_python_(ok|failure)|run_python_until_end|spawn_python|ProcessPoolExecutor|os\.system|os\.popen|os\.kill|getppid|has no attribute '(fork|wait|waitpid|system|popen|kill|killpg|execv|spawnv|posix_spawn)'`)},
	{ClassSockets, regexp.MustCompile(`(?i)socket|network|getaddrinfo|gethostbyname|gethostname|Address family|requires_working_socket|\bselect\b|selectors|ipv6|localhost|AF_INET|AF_UNIX|socketpair|\bssl\b|EAI_|urlopen|connection refused`)},
	{ClassSignals, regexp.MustCompile(`(?i)\bsignal\b|\bsignals\b|alarm|setitimer|SIGALRM|SIGINT|SIGTERM|SIGUSR|sigaction|pthread_kill|raise_signal|faulthandler.*(dump_traceback_later|register)`)},
	{ClassWASI, regexp.MustCompile(`(?i)No module named '?(pwd|grp|mmap|fcntl|termios|tty|pty|resource|syslog|_posixshmem|_multiprocessing)'?|has no attribute '(umask|getuid|geteuid|getgid|getegid|getgroups|setuid|getpwuid|getlogin|nice|getpriority|sched_\w+|getloadavg|openpty|ttyname|ctermid|mkfifo|mknod|sysconf|confstr|pathconf|fpathconf|statvfs|fstatvfs|uname|times|getrusage|setrlimit|getrlimit|dup2?|pipe2?|get_blocking|set_blocking|get_inheritable|set_inheritable|chroot|chown|fchown|lchown|fchmod|lchmod|chflags|lchflags|setsid|getsid|getpgid|setpgid|tcgetpgrp|isatty|device_encoding|getpgrp|sync|fsync|fdatasync|truncate|ftruncate|posix_fallocate|posix_fadvise|memfd_create|eventfd|splice|copy_file_range|sendfile|readv|writev|pread|pwrite|preadv|pwritev|link|lockf|major|minor|makedev|getxattr|setxattr|listxattr|removexattr|login_tty|unshare|setns|pidfd_open|waitstatus_to_exitcode)'|requires (os\.)?\w+\(\)|os\.\w+\(\) not available|works only on Linux|users and groups|Function not implemented|ENOSYS|Errno 52|Errno 58|not supported on this platform|Operation not supported`)},
	{ClassFS, regexp.MustCompile(`(?i)PermissionError|Permission denied|Errno 2 |Errno 13|Errno 63|Errno 69|Errno 76|Operation not permitted|Read-only file system|symlink|symbolic link|hard link|os\.link|/dev/|/proc/|chmod|st_mode|S_IMODE|umask|mkfifo|FileNotFoundError|NotADirectoryError|IsADirectoryError|FileExistsError|No such file or directory|Not a directory|Bad file descriptor|Errno 8 |inode|st_nlink|st_ino|st_dev|mtime|utime|hardlink|fifo|getcwd|os\.stat|lstat|os\.path\.realpath|realpath|samefile|sameopenfile|os\.open|O_NOFOLLOW|O_CLOEXEC|O_EXCL|O_DIRECTORY|scandir|sys\.executable|__pycache__|\.pyc`)},
}

// named are the modules whose failures the patterns cannot tell apart,
// with their class and a note, read from their failures (the run of
// 2026-12-07): for such a module that does not pass in strict mode, they
// take the place of the patterns' class and note.
var named = map[string]struct{ class, note string }{
	"test_contextlib":           {ClassNoSource, "ExitStack's traceback test expects the source lines of contextlib's own frames"},
	"test_doctest":              {ClassNoSource, "the doctests of error reports differ where frames of the standard library have no source; one test unlinks a .pyc in the read-only test package dir (EROFS)"},
	"test_funcattrs":            {ClassOther, "time.sleep is a Python function in strict mode (threads wait in it), so it has no __self__"},
	"test_importlib":            {ClassOther, "importlib.resources.files() without an anchor looks for res.txt beside the zip's importlib.resources, not the caller's package"},
	"test_inspect.test_inspect": {ClassNoSource, "getsource() of standard library classes; _thread._excepthook's text signature is invalid"},
	"test_linecache":            {ClassNoSource, "linecache cannot read the standard library's source"},
	"test_ntpath":               {ClassFS, "relpath('../a/b') from the cwd, which is / (strict mode's private dir)"},
	"test_pdb":                  {ClassNoSource, "pdb sessions that step through standard library frames"},
	"test_tarfile":              {ClassTimeout, "passes with a longer limit (564 passed, 0 failed, 78 skipped in 475 s, the machine loaded): each of NoneInfoExtractTests extracts the whole test archive, 13-22 s a test"},
	"test_shutil":               {ClassFS, "copyfile() into a missing dir does not raise FileNotFoundError; an xz compressor raises MemoryError under the 512 MiB limit"},
	"test_trace":                {ClassOther, "strict mode's own module hermes_tools shows in the coverage; unlinking a file under the zip's path is ENOSYS, not ENOTDIR"},
	"test_unittest":             {ClassNoSource, "unittest's traceback filtering expects the source line of its own frame"},
	"test_zipfile":              {ClassFS, "a file name with backslashes (a\\b\\c) cannot be created"},
	"test_dbm_sqlite3":          {ClassFS, "open('') touches '.' and raises IsADirectoryError, not dbm.sqlite3.error"},
}

// classifyText gives the class of a text, or "" when no pattern
// matches, and the line of the text the match is in.
func classifyText(text string) (class, line string) {
	for _, p := range patterns {
		if loc := p.re.FindStringIndex(text); loc != nil {
			start := strings.LastIndex(text[:loc[0]], "\n") + 1
			end := strings.Index(text[loc[0]:], "\n")
			if end < 0 {
				end = len(text)
			} else {
				end += loc[0]
			}
			return p.class, strings.TrimSpace(text[start:end])
		}
	}
	return "", ""
}

// Classify gives the class of a module that passes natively but not in
// strict mode (o is its strict outcome), and a note: the text the class
// comes from.
func Classify(o Outcome) (class, note string) {
	if n, ok := named[o.Module]; ok {
		return n.class, n.note
	}
	switch {
	case o.Status == StatusTimeout:
		return ClassTimeout, ""
	case o.Status == StatusCrash:
		if c, _ := classifyText(o.Error); c != "" {
			return c, "crash: " + lastLines(o.Error, 1)
		}
		return ClassOther, "crash: " + lastLines(o.Error, 1)
	case o.Error != "":
		if c, _ := classifyText(o.Error); c != "" {
			return c, lastLines(o.Error, 1)
		}
		return ClassOther, lastLines(o.Error, 1)
	case o.ModuleSkip != "" && o.Failed == 0:
		if c, _ := classifyText(o.ModuleSkip); c != "" {
			return c, "skipped: " + o.ModuleSkip
		}
		return ClassOther, "skipped: " + o.ModuleSkip
	case o.Failed == 0 && o.Passed == 0:
		if len(o.Skips) == 0 {
			return ClassOther, "every test skipped"
		}
		c, _ := classifyText(o.Skips[0].Line)
		if c == "" {
			c = ClassOther
		}
		return c, fmt.Sprintf("every test skipped (%d: %s)", o.Skips[0].Count, o.Skips[0].Line)
	}
	// Failed tests: each failure's last line, counted, votes for a class;
	// a line no pattern knows is looked up in the failures' tracebacks.
	votes := map[string]int{}
	lines := map[string]string{}
	for _, e := range o.Exceptions {
		c, line := classifyText(e.Line)
		if c == "" {
			for _, f := range o.Failures {
				if strings.HasSuffix(strings.TrimSpace(f), e.Line) {
					if c, line = classifyText(f); c != "" {
						break
					}
				}
			}
		}
		if c == "" {
			c, line = ClassOther, e.Line
		}
		votes[c] += e.Count
		if _, ok := lines[c]; !ok {
			lines[c] = line
		}
	}
	if len(votes) == 0 {
		for _, f := range o.Failures {
			c, line := classifyText(f)
			if c == "" {
				c, line = ClassOther, lastLines(f, 1)
			}
			votes[c]++
			if _, ok := lines[c]; !ok {
				lines[c] = line
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
