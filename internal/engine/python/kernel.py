import sys

from _hermes_runner import _exception_report, _exit_code, _flush, _fresh_main

_sources = {}


def _register_sources(linecache):
    # Every cell's lines, so that tracebacks through functions defined in
    # earlier cells, and inspect, show them.
    for name, source in _sources.items():
        if name not in linecache.cache:
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)


def _run_cell(namespace, n, source):
    """Runs one cell; returns (exception report or None, exit code or None)."""
    name = "<cell %d>" % n
    _sources[name] = source
    if "linecache" in sys.modules:
        # Already loaded (importing it costs, in the WASI build).
        _register_sources(sys.modules["linecache"])
    try:
        code = compile(source, name, "exec", dont_inherit=True)
        exec(code, namespace)
    except SystemExit as e:
        return None, _exit_code(e)
    except BaseException as e:
        import linecache
        _register_sources(linecache)
        return _exception_report(e, name), None
    return None, None


def main():
    import os
    import _hermes_runner
    _hermes_runner._install_quit()
    import hermes_tools

    _hermes_runner._session_dir_first(__name__ == "__main__")
    namespace = _fresh_main().__dict__
    # The first compile() builds CPython's AST types (~30 ms in the WASI
    # build): pay it at start, so a pooled kernel's first cell is fast.
    compile("", "<cell 0>", "exec", dont_inherit=True)
    request, report_exit = hermes_tools._request, hermes_tools._report_exit
    pid = os.getpid()
    done = None
    while True:
        cell = request({"op": "next", "done": done})
        if cell.get("op") != "cell":
            break
        n = cell["n"]
        report, exit_code = _run_cell(namespace, n, cell["code"])
        _flush()
        if os.getpid() != pid:
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
            report_exit(report)
        if exit_code is not None:
            os._exit(exit_code)
        done = {"n": n}


if __name__ == "__main__":
    main()
