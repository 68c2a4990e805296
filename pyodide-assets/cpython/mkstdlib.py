"""Compiles the standard library to a zip of .pyc for hermes-wasm-exec.

    python3.13 mkstdlib.py LIB_DIR BUILD_LIB_DIR ZONEINFO_DIR TZ_VERSION OUT_ZIP

LIB_DIR is CPython's Lib/, BUILD_LIB_DIR the build's lib.wasi-wasm32-3.13
(its generated _sysconfigdata module), ZONEINFO_DIR the time zone files zic
wrote (TZ_VERSION their release, such as 2026b). OUT_ZIP receives one .pyc per module,
unchecked-hash (no timestamps) and with the file name the guest sees
(/usr/local/lib/python313.zip/...), deflated by the build python's zlib
(Debian's zlib1g, pinned with the toolchain), in name order, with one fixed
timestamp and mode: the output does not depend on when or where it was built.

The time zone files go in as the package tzdata, laid out as the PyPI
package of that name (tzdata/zoneinfo/<zone>, an __init__ in every
directory, the list of zones in tzdata/zones): zoneinfo falls back to it
when no TZPATH directory has a zone, and the runtime mounts
tzdata/zoneinfo read-only at /usr/share/zoneinfo, where the C library's
localtime() and zoneinfo's TZPATH find it.

Tests, IDLE, tkinter, turtle demos and ensurepip are left out: the guest has
no display, no pip and no use for CPython's own test suite.
"""
import importlib.util
import os
import sys
import zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

ZIP_PATH = "/usr/local/lib/python313.zip"
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


def compile_one(src, rel):
    with open(src, "rb") as f:
        return compile_source(f.read(), rel)


def compile_source(data, rel):
    code = compile(data, ZIP_PATH + "/" + rel, "exec", dont_inherit=True, optimize=0)
    return _code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False)


def tzdata_entries(zoneinfo, version):
    """The package tzdata: zone files, the zones list, one __init__ per dir."""
    year, letter = version[:4], version[4:]
    if not (year.isdigit() and len(letter) == 1 and letter.isalpha()):
        sys.exit("mkstdlib.py: the time zone release %r is not like 2026b" % version)
    init = ('"""The IANA time zone database, release %s, from Debian\'s tzdata source\n'
            'package, compiled by zic for hermes-wasm-exec (the layout of the PyPI\n'
            'package tzdata)."""\nIANA_VERSION = "%s"\n__version__ = "%s.%d"\n'
            % (version, version, year, ord(letter.lower()) - ord("a") + 1)).encode()
    entries = {"tzdata/__init__.pyc": compile_source(init, "tzdata/__init__.py")}
    zones = []
    for dirpath, dirnames, filenames in os.walk(zoneinfo):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, zoneinfo).replace(os.sep, "/")
        pkg = "tzdata/zoneinfo" + ("" if rel_dir == "." else "/" + rel_dir)
        entries[pkg + "/__init__.pyc"] = compile_source(b"", pkg + "/__init__.py")
        for name in sorted(filenames):
            with open(os.path.join(dirpath, name), "rb") as f:
                data = f.read()
            entries[pkg + "/" + name] = data
            if data.startswith(b"TZif"):
                zones.append((pkg + "/" + name)[len("tzdata/zoneinfo/"):])
    if len(zones) < 300:
        sys.exit("mkstdlib.py: only %d zones in %s" % (len(zones), zoneinfo))
    entries["tzdata/zones"] = "".join(z + "\n" for z in sorted(zones)).encode()
    return entries


def main():
    lib, build_lib, zoneinfo, tz_version, out = sys.argv[1:6]
    if sys.version_info[:2] != (3, 13):
        sys.exit("mkstdlib.py: needs python3.13 (the target's bytecode), got %s" % sys.version)
    entries = {}
    for root in (lib, build_lib):
        for src, rel in sources(root):
            entries[rel.replace(os.sep, "/") + "c"] = compile_one(src, rel)
    entries.update(tzdata_entries(zoneinfo, tz_version))
    with zipfile.ZipFile(out, "w") as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3  # unix
            info.external_attr = 0o100444 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, entries[name], compresslevel=9)
    print("mkstdlib.py: %d entries (modules and time zone data) in %s" % (len(entries), out), file=sys.stderr)


main()
