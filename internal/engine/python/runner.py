import sys


def _install_quit():
    # exit() and quit() come from the site module, which strict mode skips
    # (python -S) to start faster; scripts still expect them.
    import builtins

    class _Quitter:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return "Use %s() to exit" % self.name

        def __call__(self, code=None):
            raise SystemExit(code)

    for name in ("exit", "quit"):
        if not hasattr(builtins, name):
            setattr(builtins, name, _Quitter(name))


def _exit_code(e):
    """The exit status of a SystemExit, as the interpreter would give it."""
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c
    print(c, file=sys.stderr)
    return 1


def _exception_report(e, filename):
    """Writes the traceback of e to stderr, starting at the first frame of
    filename (a syntax error has none, and shows just the error), and
    returns the report the host gets."""
    import traceback
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb))
    try:
        sys.stderr.write(text)
    except Exception:
        pass
    return {"kind": "exception", "code": 1, "type": type(e).__name__,
            "message": str(e), "traceback": text}


def _fresh_main():
    """A fresh __main__ module, as runpy makes: pickle, dataclasses and
    multiprocessing look the script's classes up there."""
    main = type(sys)("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    return main


def _session_dir_first(started_as_file):
    """Started as a file (project mode), sys.path[0] is the private dir,
    which found hermes_tools. The script runs in the session dir as
    `python script.py` would there, so that dir comes first; the private dir
    stays on PYTHONPATH."""
    if started_as_file and sys.path:
        import os
        sys.path[0] = os.getcwd()


def _no_threads():
    pass


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _hermes_main():
    _install_quit()
    import hermes_tools

    _session_dir_first(__name__ == "__main__")
    path = sys.argv[1]
    sys.argv = [path] + sys.argv[2:]
    # The name tracebacks give the script (the file `run` was given), its
    # source registered so they show its lines; gone from the environment
    # before the script runs.
    import os
    name = os.environ.pop("HERMES_SCRIPT_NAME", "") or path
    report = {"kind": "ok", "code": 0}
    try:
        with open(path, "rb") as f:
            source = f.read()
        if name != path:
            import linecache
            text = source.decode("utf-8", "replace")
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        code = compile(source, name, "exec", dont_inherit=True)
        main = _fresh_main()
        main.__file__ = path
        exec(code, main.__dict__)
        # The WASI interpreter's threads run one after another: those the
        # script started and nothing waited for run now, as the
        # interpreter's exit would wait for them.
        getattr(hermes_tools, "_run_pending_threads", _no_threads)()
    except SystemExit as e:
        report = {"kind": "exit", "code": _exit_code(e)}
    except BaseException as e:
        report = _exception_report(e, name)
    _flush()
    if report["kind"] == "exception":
        hermes_tools._report_exit(report)
    return report["code"]


def run():
    sys.exit(_hermes_main())


if __name__ == "__main__":
    run()
