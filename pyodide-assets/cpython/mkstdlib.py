"""Compiles the standard library to a zip of .pyc for hermes-wasm-exec.

    python3.11 mkstdlib.py LIB_DIR BUILD_LIB_DIR OUT_ZIP

LIB_DIR is CPython's Lib/, BUILD_LIB_DIR the build's lib.wasi-wasm32-3.11
(its generated _sysconfigdata module). OUT_ZIP receives one .pyc per module,
unchecked-hash (no timestamps) and with the file name the guest sees
(/usr/local/lib/python311.zip/...), deflated by the build python's zlib
(Debian's zlib1g, pinned with the toolchain), in name order, with one fixed
timestamp and mode: the output does not depend on when or where it was built.

Tests, IDLE, tkinter, turtle demos and ensurepip are left out: the guest has
no display, no pip and no use for CPython's own test suite.
"""
import importlib.util
import os
import sys
import zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

ZIP_PATH = "/usr/local/lib/python311.zip"
SKIP_DIRS = {"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip",
             "site-packages", "lib2to3", "__phello__", "__pycache__", "pydoc_data"}
SKIP_FILES = {"turtle.py", "this.py", "antigravity.py"}


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIP_DIRS and not d.startswith(("config-", "lib-dynload")))
        for name in sorted(filenames):
            if name.endswith(".py") and name not in SKIP_FILES:
                full = os.path.join(dirpath, name)
                yield full, os.path.relpath(full, root)


# The build names its sysconfig data after the upstream scheme
# (_sysconfigdata__wasi_wasm32-wasi); Debian's patched sysconfig looks for
# _sysconfigdata_<abiflags>_<multiarch>.
SYSCONFIGDATA = "_sysconfigdata__wasm32-wasi.py"


def compile_one(src, rel):
    with open(src, "rb") as f:
        data = f.read()
    code = compile(data, ZIP_PATH + "/" + rel, "exec", dont_inherit=True, optimize=0)
    return _code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False)


def main():
    lib, build_lib, out = sys.argv[1:4]
    if sys.version_info[:2] != (3, 11):
        sys.exit("mkstdlib.py: needs python3.11 (the target's bytecode), got %s" % sys.version)
    entries = {}
    for root in (lib, build_lib):
        for src, rel in sources(root):
            if root == build_lib and rel.startswith("_sysconfigdata_"):
                rel = SYSCONFIGDATA
            entries[rel.replace(os.sep, "/") + "c"] = compile_one(src, rel)
    with zipfile.ZipFile(out, "w") as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3  # unix
            info.external_attr = 0o100444 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, entries[name], compresslevel=9)
    print("mkstdlib.py: %d modules compiled into %s" % (len(entries), out), file=sys.stderr)


main()
