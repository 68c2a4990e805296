def _hermes_setup():
    # Run by the snapshot's interpreter after the imports it keeps (see
    # snapshot.go): it gives _hermes_host the quick way out of a one-shot
    # run, makes the state a first compile() builds, and freezes the
    # collector's view of everything the snapshot holds.
    import atexit, gc, posix, sys, _io, _hermes_host

    def status_of(code):
        # The exit status of SystemExit(code), as the interpreter's
        # handle_system_exit gives it (its C long is 32 bits here).
        if code is None:
            return 0
        if isinstance(code, int):
            return code if -(1 << 31) <= code < (1 << 31) else -1
        try:
            sys.stderr.write(str(code) + "\n")
        except Exception:
            pass
        return 1

    def flush_std():
        # Py_FinalizeEx's flush_std_files: False when a flush failed. A
        # stream without a readable "closed" counts as open, as there.
        ok = True
        for name in ("stdout", "stderr"):
            f = getattr(sys, name, None)
            if f is None:
                continue
            try:
                closed = bool(f.closed)
            except Exception:
                closed = False
            if not closed:
                try:
                    f.flush()
                except Exception:
                    ok = False
        return ok

    def clear_namespace(d):
        # A module's globals cleared as the interpreter's teardown clears
        # them (_PyModule_ClearDict): names with one leading underscore
        # first, then all but __builtins__, each value released as it is
        # replaced, so objects go in the order the script made the names.
        for first in (True, False):
            for k in list(d):
                if not isinstance(k, str) or k == "__builtins__":
                    continue
                if first and (k[:1] != "_" or k[1:2] == "_"):
                    continue
                try:
                    if d[k] is not None:
                        d[k] = None
                except Exception:
                    pass

    def open_files():
        # Every file object the script made that is still open, wherever
        # it is kept. The collector's generations hold only what was made
        # since the snapshot (gc.freeze below): the standard streams and
        # the snapshot's own objects are not among them.
        std = set()
        for f in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
            for _ in range(3):
                if f is None:
                    break
                std.add(id(f))
                f = getattr(f, "buffer", None) or getattr(f, "raw", None)
        found = []
        for o in gc.get_objects():
            if isinstance(o, _io._IOBase) and id(o) not in std:
                try:
                    if not o.closed:
                        found.append(o)
                except Exception:
                    pass
        return found

    def close_files(files):
        # files closed as their release would close them, each wrapper
        # (text over buffered over raw, a GzipFile over its file) before
        # what it wraps.
        left = {}
        for o in files:
            try:
                if not o.closed:
                    left[id(o)] = o
            except Exception:
                pass
        below = {}
        above = dict.fromkeys(left, 0)
        for i, o in left.items():
            refs = list(gc.get_referents(o))
            for r in list(refs):
                if type(r) is dict:
                    refs.extend(r.values())
            b = {id(r) for r in refs if id(r) in left and id(r) != i}
            below[i] = b
            for j in b:
                above[j] += 1
        ready = [i for i, n in above.items() if n == 0]
        done = set()
        while len(done) < len(left):
            if not ready:  # a cycle of wrappers: any of them first
                ready = [next(i for i in left if i not in done)]
            i = ready.pop()
            if i in done:
                continue
            done.add(i)
            try:
                left[i].close()
            except Exception:
                pass
            for j in below[i]:
                above[j] -= 1
                if above[j] == 0:
                    ready.append(j)

    def run_and_exit(fn):
        # Calls fn (a one-shot run's program), then ends the interpreter
        # as Py_FinalizeEx would as far as a script can tell, without
        # tearing the interpreter down: threads are waited for, the atexit
        # callbacks run, the standard streams are flushed, the script's
        # namespace is released (in the interpreter's order) and its
        # garbage collected, so __del__ methods run as at a normal exit,
        # every file the script left open is closed, wherever it is kept,
        # and the instance exits with the status the interpreter would
        # give. An exception other
        # than SystemExit propagates: the interpreter reports it and exits
        # the usual way.
        try:
            fn()
            code = None
        except SystemExit as e:
            code = e.code
        status = status_of(code)
        del fn, code
        threading = sys.modules.get("threading")
        if threading is not None:
            try:
                threading._shutdown()
            except BaseException:
                pass
        atexit._run_exitfuncs()
        if not flush_std():
            status = 120
        main = sys.modules.get("__main__")
        d = getattr(main, "__dict__", None)
        del main
        if type(d) is dict:
            clear_namespace(d)
        del d
        # The files still open are held while the collector finalises the
        # rest of the script's garbage: it would close those in reference
        # cycles in no particular order, a raw file before the buffer over
        # it, losing the buffered data (CPython bpo-17852); the finalisers
        # it runs find them open. Then they are closed in order.
        files = open_files()
        gc.collect()
        close_files(files)
        if not flush_std():
            status = 120
        posix._exit(status)

    _hermes_host._run_and_exit = run_and_exit
    # The first compile() builds the ast module's types (ms in this
    # build); the runner compiles every script.
    compile("", "", "exec")
    # What the snapshot holds is never garbage for a run: the collector
    # leaves it alone (and its pages stay shared), and a run's own objects
    # are the collector's only objects.
    gc.freeze()


_hermes_setup()
del _hermes_setup
