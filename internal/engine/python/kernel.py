import sys

from _hermes_runner import _exception_report, _exit_code, _flush, _fresh_main

_sources = {}
_last = [None]  # the name of the last cell registered with linecache
# Runs the threads a cell started that have not run yet (the WASI
# interpreter's threads run one after another: hermes_tools
# _run_pending_threads); nothing elsewhere.
_end_threads = [lambda: None]


def _register_sources(linecache):
    # Every cell's lines, so that tracebacks through functions defined in
    # earlier cells, and inspect, show them.
    for name, source in _sources.items():
        if name not in linecache.cache:
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    _last[0] = next(reversed(_sources))


def _register_cell(linecache, name, source):
    # The new cell's lines. The earlier cells' are there already (checkcache
    # keeps entries without a modification time), unless none were
    # registered yet or the cache was cleared since (linecache.clearcache(),
    # a reload): then all of them. One lookup a cell, not one for every
    # cell so far.
    cache = linecache.cache
    if _last[0] is None or _last[0] not in cache:
        _register_sources(linecache)
        return
    cache[name] = (len(source), None, source.splitlines(True), name)
    _last[0] = name


def _run_cell(namespace, n, source):
    """Runs one cell; returns (exception report or None, exit code or None)."""
    name = "<cell %d>" % n
    _sources[name] = source
    linecache = sys.modules.get("linecache")
    if linecache is not None:
        # Already loaded (importing it costs, in the WASI build).
        _register_cell(linecache, name, source)
    try:
        code = compile(source, name, "exec", dont_inherit=True)
        exec(code, namespace)
        _end_threads[0]()
    except SystemExit as e:
        return None, _exit_code(e)
    except BaseException as e:
        import linecache
        _register_cell(linecache, name, source)
        return _exception_report(e, name), None
    return None, None


def _next_cell_function(hermes_tools):
    """The loop's request for its next cell: next_cell(n) sends
    {"op": "next", "done": {"n": n}} (done null before the first cell) and
    returns the host's answer. Without a token to add (strict mode's host
    call), the line is written out: it is made once per cell, and the JSON
    encoder costs more than the rest of it."""
    request = hermes_tools._request
    if hermes_tools._TOKEN is not None:
        return lambda n: request({"op": "next", "done": None if n is None else {"n": n}})
    roundtrip = hermes_tools._roundtrip
    decode = hermes_tools._json_codec()[1]

    def next_cell(n):
        if n is None:
            line = b'{"op":"next","done":null}\n'
        else:
            line = b'{"op":"next","done":{"n":%d}}\n' % n
        return decode(roundtrip(line).decode("utf-8", "replace"))
    return next_cell


def _flush_function():
    """What flushes the output streams after a cell. The interpreter's own
    streams run unbuffered (-u): a text layer that writes through to the
    file, holding nothing after a write. While a cell leaves them in place
    and writing through, flushing them does nothing, and is skipped;
    otherwise (a stream replaced or reconfigured) they are flushed."""
    import io
    out, err = sys.stdout, sys.stderr
    if not all(isinstance(s, io.TextIOWrapper) and s.write_through and type(s.buffer) is io.FileIO for s in (out, err)):
        return _flush

    def flush():
        if sys.stdout is not out or sys.stderr is not err or not (out.write_through and err.write_through):
            _flush()
    return flush


_loop = {}  # what start() set up, for step()


def start():
    """The loop's start: imports what the cells need and sets up the
    namespace. main() runs the loop after it; strict mode's host calls
    step() for each cell instead (hermes_step), so that between cells no
    call is in progress in the interpreter."""
    import os
    import _hermes_runner
    _hermes_runner._install_quit()
    import hermes_tools
    _end_threads[0] = getattr(hermes_tools, "_run_pending_threads", _end_threads[0])

    _hermes_runner._session_dir_first(__name__ == "__main__")
    _loop["namespace"] = _fresh_main().__dict__
    # The first compile() builds CPython's AST types (~30 ms in the WASI
    # build): pay it at start, so a pooled kernel's first cell is fast.
    compile("", "<cell 0>", "exec", dont_inherit=True)
    _loop["next_cell"] = _next_cell_function(hermes_tools)
    _loop["report_exit"] = hermes_tools._report_exit
    _loop["request"] = hermes_tools._request
    _loop["pid"] = os.getpid()
    _loop["flush"] = _flush_function()


def _run(cell):
    """Runs the cell the host gave, as the loop does: its output flushed,
    its end marked with its nonce, its exception reported, its SystemExit
    ending the process."""
    import os
    n = cell["n"]
    report, exit_code = _run_cell(_loop["namespace"], n, cell["code"])
    _loop["flush"]()
    if os.getpid() != _loop["pid"]:
        # A process the cell forked ran to the cell's end: it must not
        # take over the loop.
        os._exit(exit_code if exit_code is not None else (1 if report else 0))
    nonce = cell.get("nonce")
    if nonce:
        mark = nonce.encode("ascii")
        for fd in (1, 2):
            try:
                os.write(fd, mark)
            except OSError:
                pass
    if report is not None:
        _loop["report_exit"](report)
    if exit_code is not None:
        os._exit(exit_code)
    return n


def _open_fds(first):
    """The descriptors from first up that are open: WASI numbers them
    lowest first, so the search ends after a run of closed ones."""
    import os
    out, fd, misses = [], first, 0
    while misses < 64:
        try:
            os.fstat(fd)
        except OSError:
            misses += 1
        else:
            out.append(fd)
            misses = 0
        fd += 1
    return out


def _offsets(fds):
    """Each descriptor's offset; -1 where it has none (a directory)."""
    import os
    out = []
    for fd in fds:
        try:
            out.append(os.lseek(fd, 0, os.SEEK_CUR))
        except OSError:
            out.append(-1)
    return out


def _reopen(files):
    """A resumed kernel's files, reopened at their old descriptors and
    offsets (the host moves a descriptor: {"op": "renumber"}). Returns ""
    or why one did not reopen."""
    import os
    modes = {"r": os.O_RDONLY, "w": os.O_WRONLY, "rw": os.O_RDWR,
             "a": os.O_WRONLY | os.O_APPEND, "ra": os.O_RDWR | os.O_APPEND}
    for f in sorted(files, key=lambda f: f["fd"]):
        try:
            fd = os.open(f["path"], modes[f["flags"]])
            if f["offset"] > 0:
                os.lseek(fd, f["offset"], os.SEEK_SET)
            if fd != f["fd"]:
                errno = _loop["request"]({"op": "renumber", "from": fd, "to": f["fd"]}).get("errno")
                if errno:
                    os.close(fd)
                    raise OSError(errno, "cannot move the descriptor %d to %d" % (fd, f["fd"]))
        except Exception as e:
            return "%s: %s" % (f["path"], e)
    return ""


def step():
    """One cell: asks the host for it (which the host already holds: it
    calls step only then) and runs it. Returns False when the host said
    close instead. The host knows the cell is done when step returns. The
    host may ask instead which descriptors the kernel holds open ("fds",
    before it suspends the kernel), have it reopen them ("reopen", a
    resumed kernel), or have it seed its random module afresh ("reseed", a
    copy of another kernel)."""
    cell = _loop["next_cell"](None)
    op = cell.get("op")
    if op == "fds":
        fds = _open_fds(cell["first"])
        _loop["request"]({"op": "fds", "open": fds, "offsets": _offsets(fds)})
        return True
    if op == "reopen":
        _loop["request"]({"op": "reopened", "error": _reopen(cell["files"])})
        return True
    if op == "reseed":
        # A copy of another kernel: its random stream is its own, as a
        # forked process's is.
        r = sys.modules.get("random")
        if r is not None:
            r.seed()
        return True
    if op != "cell":
        return False
    _run(cell)
    return True


def main():
    start()
    next_cell = _loop["next_cell"]
    done = None
    while True:
        cell = next_cell(done)
        if cell.get("op") != "cell":
            break
        done = _run(cell)


if __name__ == "__main__":
    main()
