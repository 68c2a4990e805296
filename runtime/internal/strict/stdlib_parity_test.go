package strict

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/require"
)

// Why a standard library module does not import in strict mode (or what it
// cannot do there although it imports).
const (
	// inherent: WASI preview 1 has no such facility (threads, processes,
	// signals, sockets beyond the host's pre-opened ones, terminals, users,
	// memory mapping, native code), so no build of CPython for it can
	// offer the module.
	inherent = "inherent to WASI preview 1"
	// buildChoice: the module could be built but is not, for the reason
	// given (a library not linked in, or left out of the zip).
	buildChoice = "build choice"
	// otherOS: the module exists only on Windows or macOS.
	otherOS = "other platforms only"
)

// stdlibModule is what strict mode offers of one standard library module.
type stdlibModule struct {
	imports bool
	kind    string // inherent, buildChoice or otherOS; for a module that imports, the kind of its limit
	why     string // the reason it does not import, or its limit
}

// importsOK are the top-level standard library modules that import in
// strict mode with no limit worth a note (see stdlibLimits for those that
// import but cannot do everything).
var importsOK = strings.Fields(`__future__ _abc _aix_support _android_support _apple_support _ast _asyncio _bisect _blake2 _bz2
_codecs _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr _codecs_tw _collections
_collections_abc _colorize _compat_pickle _compression _contextvars _csv _datetime _decimal
_elementtree _frozen_importlib _frozen_importlib_external _functools _heapq _imp _io _ios_support
_json _locale _lsprof _lzma _markupbase _md5 _multibytecodec _opcode _opcode_metadata _operator
_osx_support _pickle _py_abc _pydatetime _pydecimal _pyio _pylong _pyrepl _queue _random _sha1 _sha2
_sha3 _sitebuiltins _sqlite3 _sre _stat _statistics _string _strptime _struct _suggestions _symtable
_sysconfig _threading_local _tokenize _tracemalloc _typing _warnings _weakref _weakrefset _zoneinfo
abc argparse array ast atexit base64 bdb binascii bisect builtins bz2 cProfile calendar cmath cmd
code codecs codeop collections colorsys compileall configparser contextlib contextvars copy copyreg
csv dataclasses datetime decimal difflib dis doctest email encodings enum errno faulthandler filecmp
fileinput fnmatch fractions functools gc genericpath getopt gettext glob graphlib gzip heapq hmac
html importlib inspect io ipaddress itertools json keyword linecache locale logging lzma mailbox
marshal math mimetypes modulefinder netrc ntpath nturl2path numbers opcode operator optparse pathlib
pdb pickle pickletools pkgutil platform plistlib posix posixpath pprint profile pstats py_compile
pyclbr pydoc pyexpat queue quopri random re reprlib rlcompleter runpy sched secrets shelve shlex
shutil site sqlite3 sre_compile sre_constants sre_parse stat statistics string stringprep struct
symtable sys sysconfig tabnanny tarfile tempfile textwrap time timeit token tokenize tomllib trace
traceback tracemalloc types typing unicodedata unittest uuid venv warnings wave weakref wsgiref xml
zipapp zipfile zipimport zlib zoneinfo`)

// stdlibLimits are the modules that do not import in strict mode, and
// those that import but cannot do everything, with the reason.
var stdlibLimits = map[string]stdlibModule{
	// Import, with limits.
	"_thread":          {true, inherent, "imports; `_thread.start_new_thread` raises RuntimeError (WASI preview 1 has no threads); `threading` runs threads one after another (docs/modes.md)"},
	"threading":        {true, inherent, "threads run one after another, each when something waits for it (join, a queue, an event, sleep, the end of the script); a wait nothing left can satisfy raises RuntimeError (deadlock); `local()` is shared"},
	"concurrent":       {true, inherent, "ThreadPoolExecutor runs each task as it is submitted; ProcessPoolExecutor cannot start workers (no processes)"},
	"multiprocessing":  {true, inherent, "imports; Process and Pool cannot start (no processes)"},
	"asyncio":          {true, inherent, "event loop, tasks, timers and queues work; no subprocesses, no network connections"},
	"subprocess":       {true, inherent, "commands run through the terminal tool (its approvals, timeout and budget), stdout and stderr apart; no interactive pipes"},
	"_signal":          {true, inherent, "imports; no signal is ever delivered, no alarm()"},
	"signal":           {true, inherent, "imports; no signal is ever delivered, no alarm()"},
	"_socket":          {true, inherent, "imports; no sockets can be created (WASI preview 1 has no socket(), connect() or name resolution)"},
	"socket":           {true, inherent, "imports; no sockets can be created; connecting or resolving raises OSError saying the sandbox has no network and to use web_extract"},
	"select":           {true, inherent, "imports; select() works on files only"},
	"selectors":        {true, inherent, "imports; on files only"},
	"socketserver":     {true, inherent, "imports; cannot serve (no sockets)"},
	"ftplib":           {true, inherent, "imports; no network"},
	"http":             {true, inherent, "imports (http.client, http.server, cookies); no network"},
	"imaplib":          {true, inherent, "imports; no network"},
	"poplib":           {true, inherent, "imports; no network"},
	"smtplib":          {true, inherent, "imports; no network"},
	"urllib":           {true, inherent, "imports (urllib.parse works); urllib.request raises URLError saying the sandbox has no network and to use web_extract"},
	"xmlrpc":           {true, inherent, "imports; no network"},
	"webbrowser":       {true, inherent, "imports; open() returns False (no browser, no processes)"},
	"os":               {true, inherent, "imports; no fork, exec, kill or pipes; files and directories work"},
	"getpass":          {true, inherent, "imports; getuser() fails without USER/LOGNAME set (no pwd)"},
	"hashlib":          {true, buildChoice, "imports; md5, sha1, sha2, sha3, blake2 and pbkdf2_hmac (pure Python, as in 3.11) work; no scrypt and no OpenSSL-only algorithms (OpenSSL not linked in)"},
	"dbm":              {true, buildChoice, "imports; dbm.sqlite3 (the default) and dbm.dumb, no dbm.gnu or dbm.ndbm (no gdbm or ndbm linked in)"},
	"ctypes":           {false, inherent, "WebAssembly cannot load or call native code (no dlopen; libffi has no wasm32-wasi port)"},
	"_ctypes":          {false, inherent, "WebAssembly cannot load or call native code (no dlopen; libffi has no wasm32-wasi port)"},
	"_multiprocessing": {false, inherent, "no processes and no semaphores in WASI preview 1"},
	"_posixshmem":      {false, inherent, "no shared memory in WASI preview 1"},
	"_posixsubprocess": {false, inherent, "no fork or exec in WASI preview 1"},
	"fcntl":            {false, inherent, "no fcntl() locks or ioctl() in WASI preview 1"},
	"mmap":             {false, inherent, "no memory mapping of files in WASI preview 1"},
	"grp":              {false, inherent, "no users or groups in WASI preview 1"},
	"pwd":              {false, inherent, "no users or groups in WASI preview 1"},
	"resource":         {false, inherent, "no resource limits or usage in WASI preview 1"},
	"syslog":           {false, inherent, "no syslog in WASI preview 1"},
	"termios":          {false, inherent, "no terminal interface in WASI preview 1"},
	"tty":              {false, inherent, "needs termios: no terminal interface in WASI preview 1"},
	"pty":              {false, inherent, "needs termios and fork: neither exists in WASI preview 1"},
	"_ssl":             {false, buildChoice, "OpenSSL is not linked in (and there is no network to use it on)"},
	"ssl":              {false, buildChoice, "OpenSSL is not linked in (and there is no network to use it on)"},
	"_hashlib":         {false, buildChoice, "OpenSSL is not linked in; hashlib uses its built-in algorithms"},
	"_uuid":            {false, buildChoice, "libuuid is not linked in; uuid works without it"},
	"_dbm":             {false, buildChoice, "no ndbm linked in; dbm uses dbm.sqlite3"},
	"_gdbm":            {false, buildChoice, "no gdbm linked in; dbm uses dbm.sqlite3"},
	"readline":         {false, buildChoice, "GNU readline is not linked in: a script's stdin is not a terminal"},
	"_curses":          {false, buildChoice, "ncurses is not linked in: a script's output is not a terminal"},
	"_curses_panel":    {false, buildChoice, "ncurses is not linked in: a script's output is not a terminal"},
	"curses":           {false, buildChoice, "ncurses is not linked in: a script's output is not a terminal"},
	"_tkinter":         {false, buildChoice, "Tcl/Tk is not linked in: there is no display"},
	"tkinter":          {false, buildChoice, "left out of the standard library zip: there is no display"},
	"turtle":           {false, buildChoice, "left out of the standard library zip: there is no display"},
	"turtledemo":       {false, buildChoice, "left out of the standard library zip: there is no display"},
	"idlelib":          {false, buildChoice, "left out of the standard library zip: IDLE needs a display"},
	"ensurepip":        {false, buildChoice, "left out of the standard library zip: nothing can be installed in the sandbox"},
	"pydoc_data":       {false, buildChoice, "left out of the standard library zip (help()'s topic texts)"},
	"this":             {false, buildChoice, "left out of the standard library zip (prints on import)"},
	"antigravity":      {false, buildChoice, "left out of the standard library zip (opens a web browser)"},
	"_overlapped":      {false, otherOS, "Windows only"},
	"_winapi":          {false, otherOS, "Windows only"},
	"msvcrt":           {false, otherOS, "Windows only"},
	"nt":               {false, otherOS, "Windows only"},
	"winreg":           {false, otherOS, "Windows only"},
	"winsound":         {false, otherOS, "Windows only"},
	"_wmi":             {false, otherOS, "Windows only"},
	"_interpreters":    {false, inherent, "subinterpreters need threads, which WASI preview 1 lacks (CPython builds them only with threads)"},
	"_interpchannels":  {false, inherent, "subinterpreters need threads, which WASI preview 1 lacks (CPython builds them only with threads)"},
	"_interpqueues":    {false, inherent, "subinterpreters need threads, which WASI preview 1 lacks (CPython builds them only with threads)"},
	"_scproxy":         {false, otherOS, "macOS only"},
}

// stdlibTable is every top-level standard library module and what strict
// mode offers of it.
func stdlibTable() map[string]stdlibModule {
	table := maps.Clone(stdlibLimits)
	for _, name := range importsOK {
		table[name] = stdlibModule{imports: true}
	}
	return table
}

// TestStrictStdlibParity imports every top-level module of the standard
// library (the guest interpreter's own sys.stdlib_module_names) in strict
// mode and compares the outcome with stdlibTable: a module that stops
// importing, one that starts to (a new ability: update the table and the
// docs), and a module missing from the table or no longer in the standard
// library all fail the test.
func TestStrictStdlibParity(t *testing.T) {
	res := run(t, `
import importlib, sys
for name in sorted(sys.stdlib_module_names):
    try:
        importlib.import_module(name)
        print(name, "ok")
    except BaseException as e:
        print(name, type(e).__name__ + ":", str(e).replace("\n", " "))
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)

	table := stdlibTable()
	require.Len(t, table, len(importsOK)+len(stdlibLimits), "a module is both in importsOK and in stdlibLimits")
	var problems []string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		name, outcome, _ := strings.Cut(line, " ")
		seen[name] = true
		want, listed := table[name]
		switch {
		case !listed:
			problems = append(problems, fmt.Sprintf("%s is in sys.stdlib_module_names but not in the table (import: %s)", name, outcome))
		case want.imports && outcome != "ok":
			problems = append(problems, fmt.Sprintf("%s no longer imports: %s", name, outcome))
		case !want.imports && outcome == "ok":
			problems = append(problems, fmt.Sprintf("%s imports now (the table says: %s, %s): update the table and the docs", name, want.kind, want.why))
		case !want.imports && !strings.HasPrefix(outcome, "ModuleNotFoundError:"):
			problems = append(problems, fmt.Sprintf("%s fails in a new way: %s", name, outcome))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(table)) {
		if !seen[name] {
			problems = append(problems, name+" is in the table but not in sys.stdlib_module_names")
		}
	}
	require.Empty(t, problems, "strict mode's standard library differs from the table in stdlib_parity_test.go")
}

// TestStrictStdlibLimits: the limits the table states for modules that
// import hold (a change means the table and the docs need updating).
func TestStrictStdlibLimits(t *testing.T) {
	res := run(t, `
import os
def probe(label, f):
    try:
        f()
        print(label, "works")
    except Exception as e:
        print(label, type(e).__name__)
import threading, socket, subprocess, concurrent.futures, hashlib, dbm, signal
probe("thread", lambda: threading.Thread(target=lambda: None).start())
probe("pool", lambda: concurrent.futures.ThreadPoolExecutor().submit(lambda: None).result())
probe("socket", socket.socket)
probe("subprocess", lambda: subprocess.run(["true"]))
probe("fork", lambda: os.fork())
probe("alarm", lambda: signal.alarm(1))
probe("pbkdf2", lambda: hashlib.pbkdf2_hmac("sha256", b"p", b"s", 10))
assert hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 4096, 20).hex() == "c5e478d59288c841aa530db6845c4c8d962893a0", "RFC 7914's vector"
assert hashlib.pbkdf2_hmac("sha1", b"x" * 100, b"salt", 2).hex() == "9162cc76c004b470bd2085f8f7c1a6335eb140a7", "a key longer than the block"
probe("scrypt", lambda: hashlib.scrypt(b"p", salt=b"s", n=2, r=1, p=1))
probe("dbm", lambda: dbm.open("x.db", "c").close())
print(dbm.whichdb("x.db"))
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, `thread works
pool works
socket OSError
subprocess works
fork AttributeError
alarm AttributeError
pbkdf2 works
scrypt AttributeError
dbm works
dbm.sqlite3
`, res.Output)
}
