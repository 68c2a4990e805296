package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/runtime/shared"
)

// previousModules are the public standard library modules the previous
// interpreter (the VMware Labs CPython 3.12.0 WASI build) could import:
// every one must still import. (lzma, pty and tty never did; 3.12-only
// private modules such as _sha2 and _pylong are not listed.)
var previousModules = strings.Fields(`__future__ abc aifc argparse array ast asyncio atexit audioop
base64 bdb binascii bisect builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs
codeop collections colorsys compileall concurrent configparser contextlib contextvars copy copyreg
crypt csv dataclasses datetime dbm decimal difflib dis doctest email encodings enum errno
faulthandler filecmp fileinput fnmatch fractions ftplib functools gc genericpath getopt getpass
gettext glob graphlib gzip hashlib heapq hmac html http imaplib imghdr importlib inspect io
ipaddress itertools json keyword linecache locale logging mailbox mailcap marshal math mimetypes
modulefinder netrc nntplib ntpath nturl2path numbers opcode operator optparse os pathlib pdb
pickle pickletools pipes pkgutil platform plistlib poplib posix posixpath pprint profile pstats
py_compile pyclbr pydoc pyexpat queue quopri random re reprlib runpy sched secrets select
selectors shelve shlex shutil signal site smtplib sndhdr socket socketserver sqlite3 sre_compile
sre_constants sre_parse stat statistics string stringprep struct subprocess sunau symtable sys
sysconfig tabnanny tarfile telnetlib tempfile textwrap threading time timeit token tokenize tomllib
trace traceback tracemalloc types typing unicodedata unittest urllib uuid warnings wave weakref
wsgiref xml xmlrpc zipapp zipfile zipimport zlib zoneinfo
_asyncio _bisect _blake2 _bz2 _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr
_codecs_tw _contextvars _crypt _csv _datetime _decimal _elementtree _heapq _json _lsprof _md5
_multibytecodec _pickle _queue _random _sha1 _sha3 _socket _sqlite3 _statistics _struct _zoneinfo
xml.etree.ElementTree xml.dom.minidom email.mime.text http.client urllib.request json.decoder
concurrent.futures logging.handlers importlib.metadata sqlite3.dbapi2`)

func TestStrictStdlibParity(t *testing.T) {
	code := "import importlib\nbad = []\nfor name in " + pyList(previousModules) + `:
    try:
        importlib.import_module(name)
    except BaseException as e:
        bad.append("%s: %r" % (name, e))
print("\n".join(bad) or "all imported")
`
	res := run(t, code, nil)
	require.Equal(t, shared.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "all imported\n", res.Output)
}

// TestStrictCompressionAndSQLite uses the libraries linked into the
// interpreter (zlib, bzip2, SQLite) the way scripts do, files included.
func TestStrictCompressionAndSQLite(t *testing.T) {
	res := run(t, `
import bz2, gzip, sqlite3, zlib, hashlib, io, zipfile
data = ("hermes " * 5000).encode()
assert zlib.decompress(zlib.compress(data, 9)) == data and len(zlib.compress(data)) < 200
assert bz2.decompress(bz2.compress(data)) == data
with gzip.open("log.gz", "wt") as f:
    f.write("line\n" * 1000)
with gzip.open("log.gz", "rt") as f:
    assert f.read().count("line") == 1000
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("a.txt", data)
assert zipfile.ZipFile(buf).read("a.txt") == data

db = sqlite3.connect("app.db")
db.execute("create table t (id integer primary key, name text, score real)")
db.executemany("insert into t (name, score) values (?, ?)", [("n%d" % i, i / 2) for i in range(1000)])
db.commit()
db.close()
db = sqlite3.connect("app.db")
(n, total), = db.execute("select count(*), sum(score) from t")
fts = db.execute("select sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0]
db.execute("create virtual table docs using fts5(body)")
db.execute("insert into docs values ('the quick brown fox')")
hit = db.execute("select count(*) from docs where docs match 'quick'").fetchone()[0]
mem = sqlite3.connect(":memory:")
mem.execute("create table k (v)")
print(n, total, fts, hit, sqlite3.sqlite_version, hashlib.sha256(b"x").hexdigest()[:8])
`, nil)
	require.Equal(t, shared.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "1000 249750.0 1 1 3.40.1 2d711642\n", res.Output)
}

// TestStrictStdlibReadOnly: the standard library is mounted read-only and
// is the only thing under /usr/local/lib.
func TestStrictStdlibReadOnly(t *testing.T) {
	res := run(t, `
import os, sys
print(os.listdir("/usr/local/lib"), sys.prefix, sys.path[1:2])
try:
    with open("/usr/local/lib/python311.zip", "ab") as f:
        f.write(b"x")
    print("writable")
except OSError as e:
    print("read-only", e.errno != 0)
try:
    open("/usr/local/lib/evil.py", "w")
    print("created")
except OSError:
    print("no new files")
`, nil)
	require.Equal(t, shared.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "['python311.zip'] /usr/local ['/usr/local/lib/python311.zip']\nread-only True\nno new files\n", res.Output)
}

func pyList(names []string) string {
	return "['" + strings.Join(names, "', '") + "']"
}

// TestStrictAsyncio: asyncio's event loop runs in strict mode (timers,
// gather, queues, wait_for), twice in one script, and a script waiting in
// it is stopped at its timeout.
func TestStrictAsyncio(t *testing.T) {
	res := run(t, `
import asyncio
async def work(i):
    await asyncio.sleep(0.02 * i)
    return i * 2
async def main():
    r = await asyncio.gather(*(work(i) for i in range(5)))
    q = asyncio.Queue()
    await q.put("item")
    try:
        await asyncio.wait_for(asyncio.sleep(10), 0.05)
    except asyncio.TimeoutError:
        return r, await q.get(), "timed out"
print(asyncio.run(main()))
print(asyncio.run(main()))
`, nil)
	require.Equal(t, shared.StatusSuccess, res.Status, res.Output)
	require.Equal(t, strings.Repeat("([0, 2, 4, 6, 8], 'item', 'timed out')\n", 2), res.Output)

	res = run(t, "import asyncio\nasyncio.run(asyncio.sleep(600))\n", func(r *shared.Request) { r.Timeout = time.Second })
	require.Equal(t, shared.StatusTimeout, res.Status, res.Output)
}
