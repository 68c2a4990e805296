package strict

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// previousModules are the public standard library modules the previous
// interpreter (the VMware Labs CPython 3.12.0 WASI build) could import,
// with the submodules scripts use most: every one must still import.
// (3.12-only private modules such as _sha2 and _pylong are not listed.)
// The modules PEP 594 removed from Python 3.13 (aifc, audioop, cgi, cgitb,
// chunk, crypt and _crypt, imghdr, mailcap, nntplib, pipes, sndhdr, sunau,
// telnetlib) are gone from the interpreter as from a native 3.13: see
// removedIn313.
var previousModules = strings.Fields(`__future__ abc argparse array ast asyncio atexit base64 bdb binascii bisect builtins bz2 cProfile
calendar cmath cmd code codecs codeop collections colorsys compileall concurrent configparser
contextlib contextvars copy copyreg csv dataclasses datetime dbm decimal difflib dis doctest email
encodings enum errno faulthandler filecmp fileinput fnmatch fractions ftplib functools gc
genericpath getopt getpass gettext glob graphlib gzip hashlib heapq hmac html http imaplib importlib
inspect io ipaddress itertools json keyword linecache locale logging mailbox marshal math mimetypes
modulefinder netrc ntpath nturl2path numbers opcode operator optparse os pathlib pdb pickle
pickletools pkgutil platform plistlib poplib posix posixpath pprint profile pstats py_compile pyclbr
pydoc pyexpat queue quopri random re reprlib runpy sched secrets select selectors shelve shlex
shutil signal site smtplib socket socketserver sqlite3 sre_compile sre_constants sre_parse stat
statistics string stringprep struct subprocess symtable sys sysconfig tabnanny tarfile tempfile
textwrap threading time timeit token tokenize tomllib trace traceback tracemalloc types typing
unicodedata unittest urllib uuid warnings wave weakref wsgiref xml xmlrpc zipapp zipfile zipimport
zlib zoneinfo lzma _lzma _asyncio _bisect _blake2 _bz2 _codecs_cn _codecs_hk _codecs_iso2022
_codecs_jp _codecs_kr _codecs_tw _contextvars _csv _datetime _decimal _elementtree _heapq _json
_lsprof _md5 _multibytecodec _pickle _queue _random _sha1 _sha3 _socket _sqlite3 _statistics _struct
_zoneinfo xml.etree.ElementTree xml.dom.minidom email.mime.text http.client urllib.request
json.decoder concurrent.futures logging.handlers importlib.metadata sqlite3.dbapi2`)

// removedIn313 are the modules of previousModules that PEP 594 removed
// from the standard library in Python 3.13.
var removedIn313 = strings.Fields(`aifc audioop cgi cgitb chunk crypt _crypt imghdr mailcap nntplib
pipes sndhdr sunau telnetlib`)

// TestStrictStdlibRemovedIn313: they fail as on a native 3.13, by name.
func TestStrictStdlibRemovedIn313(t *testing.T) {
	res := run(t, "import importlib\nfor name in "+pyList(removedIn313)+`:
    try:
        importlib.import_module(name)
        print(name, "imports")
    except ModuleNotFoundError as e:
        assert e.name == name, e
`+"print('all removed')\n", nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "all removed\n", res.Output)
}

// TestStrictStdlibSubmodules: the submodules and private modules scripts
// use import (TestStrictStdlibParity covers the top-level names).
func TestStrictStdlibSubmodules(t *testing.T) {
	code := "import importlib\nbad = []\nfor name in " + pyList(previousModules) + `:
    try:
        importlib.import_module(name)
    except BaseException as e:
        bad.append("%s: %r" % (name, e))
print("\n".join(bad) or "all imported")
`
	res := run(t, code, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
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
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "1000 249750.0 1 1 3.40.1 2d711642\n", res.Output)
}

// TestStrictStdlibReadOnly: the standard library is mounted read-only and
// is the only thing under /usr/local/lib.
// stdlibWriteProbe tries to change the standard library zip and to add a
// file beside it, printing what happened.
const stdlibWriteProbe = `try:
    with open("/usr/local/lib/python313.zip", "ab") as f:
        f.write(b"x")
    print("writable")
except OSError as e:
    print("read-only", e.errno != 0)
try:
    open("/usr/local/lib/evil.py", "w")
    print("created")
except OSError:
    print("no new files")
`

func TestStrictStdlibReadOnly(t *testing.T) {
	res := run(t, `
import os, sys
print(os.listdir("/usr/local/lib"), sys.prefix, sys.path[1:2])
`+stdlibWriteProbe, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "['python313.zip'] /usr/local ['/usr/local/lib/python313.zip']\nread-only True\nno new files\n", res.Output)
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
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, strings.Repeat("([0, 2, 4, 6, 8], 'item', 'timed out')\n", 2), res.Output)

	res = run(t, "import asyncio\nasyncio.run(asyncio.sleep(600))\n", func(r *engine.Request) { r.Timeout = time.Second })
	require.Equal(t, config.StatusTimeout, res.Status, res.Output)
}

// TestStrictZoneinfo: zoneinfo has the IANA database (the tzdata package in
// the standard library zip, and the same files read-only at
// /usr/share/zoneinfo), and its clock is right: now in Tokyo is the host's
// UTC clock plus nine hours.
func TestStrictZoneinfo(t *testing.T) {
	before := time.Now().UTC()
	res := run(t, `
import datetime, os, zoneinfo, tzdata
tokyo = datetime.datetime.now(zoneinfo.ZoneInfo("Asia/Tokyo"))
print(tokyo.strftime("%Y-%m-%dT%H:%M:%S"), tokyo.utcoffset(), tokyo.tzname())
zones = zoneinfo.available_timezones()
print(len(zones) > 500, {"Asia/Tokyo", "America/New_York", "Europe/London", "UTC"} <= zones)
ny = zoneinfo.ZoneInfo("America/New_York")
for ts in (1710050000, 1710054000, 1730595600, 1730599200):
    print(datetime.datetime.fromtimestamp(ts, ny).isoformat(), end=" ")
print()
lh = zoneinfo.ZoneInfo("Australia/Lord_Howe")
print(datetime.datetime(2026, 7, 1, 12, tzinfo=lh).utcoffset(), datetime.datetime(2027, 1, 1, 12, tzinfo=lh).utcoffset())
print(tzdata.IANA_VERSION, zoneinfo.TZPATH[0], os.path.exists("/usr/share/zoneinfo/Europe/Paris"))
try:
    zoneinfo.ZoneInfo("Mars/Olympus_Mons")
except zoneinfo.ZoneInfoNotFoundError as e:
    print("not found:", e)
# The tzdata package alone (no TZPATH) has every zone too.
zoneinfo.reset_tzpath([])
print(datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo.no_cache("America/Argentina/Buenos_Aires")).utcoffset())
try:
    open("/usr/share/zoneinfo/evil", "w")
except OSError:
    print("read-only")
`, nil)
	after := time.Now().UTC()
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	lines := strings.Split(res.Output, "\n")
	require.Len(t, lines, 9, res.Output)

	stamp, rest, _ := strings.Cut(lines[0], " ")
	require.Equal(t, "9:00:00 JST", rest)
	tokyo, err := time.Parse("2006-01-02T15:04:05", stamp)
	require.NoError(t, err)
	// Tokyo's wall clock, read as UTC, is the host's UTC clock plus 9 hours.
	require.WithinRange(t, tokyo, before.Add(9*time.Hour).Truncate(time.Second), after.Add(9*time.Hour))

	require.Equal(t, "True True", lines[1])
	// Around the 2024 DST changes (values from a native Python on glibc).
	require.Equal(t, "2024-03-10T00:53:20-05:00 2024-03-10T03:00:00-04:00 2024-11-02T21:00:00-04:00 2024-11-02T22:00:00-04:00 ", lines[2])
	require.Equal(t, "10:30:00 11:00:00", lines[3], "Lord Howe: +10:30 in its winter, half an hour of DST in its summer")
	require.Regexp(t, `^20[0-9]{2}[a-z] /usr/share/zoneinfo True$`, lines[4])
	require.Equal(t, "not found: 'No time zone found with key Mars/Olympus_Mons'", lines[5])
	require.Equal(t, "-1 day, 21:00:00", lines[6])
	require.Equal(t, "read-only", lines[7])
}

// TestStrictLocaltimeFollowsTZ: the C library's local time (time.localtime,
// mktime, strftime, tzname, datetime.now().astimezone()) follows TZ, as the
// executor sets it from the config's timezone; without TZ it is UTC.
func TestStrictLocaltimeFollowsTZ(t *testing.T) {
	withTZ := func(tz string) func(*engine.Request) {
		return func(r *engine.Request) { r.Env = engine.MergeEnv(r.Env, []string{"TZ=" + tz}) }
	}
	before := time.Now().UTC()
	res := run(t, `
import time, datetime
print(time.strftime("%Y-%m-%dT%H:%M:%S %Z %z"))
print(time.tzname, time.timezone, time.daylight, time.localtime().tm_gmtoff)
print(datetime.datetime.now().astimezone().utcoffset())
lt = time.localtime(1e9)
print(tuple(lt), lt.tm_zone, time.mktime(lt), time.strftime("%Z", lt))
`, withTZ("Asia/Tokyo"))
	after := time.Now().UTC()
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	lines := strings.Split(res.Output, "\n")
	require.Len(t, lines, 5, res.Output)
	stamp, rest, _ := strings.Cut(lines[0], " ")
	require.Equal(t, "JST +0900", rest)
	local, err := time.Parse("2006-01-02T15:04:05", stamp)
	require.NoError(t, err)
	require.WithinRange(t, local, before.Add(9*time.Hour).Truncate(time.Second), after.Add(9*time.Hour))
	require.Equal(t, "('JST', 'JST') -32400 0 32400", lines[1])
	require.Equal(t, "9:00:00", lines[2])
	require.Equal(t, "(2001, 9, 9, 10, 46, 40, 6, 252, 0) JST 1000000000.0 JST", lines[3])

	// DST, a change of TZ at run time (time.tzset), POSIX TZ strings and
	// names without '/'; values from a native Python on glibc.
	res = run(t, `
import os, time
def show(tz):
    os.environ["TZ"] = tz
    time.tzset()
    print(tz, time.tzname, time.timezone, [time.strftime("%H:%M %Z", time.localtime(s)) for s in (1710050000, 1710054000)])
show("America/New_York")
show("Europe/London")
show("EST5EDT")
show("JST-9")
show("Japan")
show("UTC")
del os.environ["TZ"]
time.tzset()
print(time.tzname, time.localtime(0).tm_hour)
`, withTZ("Europe/Paris"))
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, `America/New_York ('EST', 'EDT') 18000 ['00:53 EST', '03:00 EDT']
Europe/London ('GMT', 'BST') 0 ['05:53 GMT', '07:00 GMT']
EST5EDT ('EST', 'EDT') 18000 ['00:53 EST', '03:00 EDT']
JST-9 ('JST', 'JST') -32400 ['14:53 JST', '16:00 JST']
Japan ('JST', 'JST') -32400 ['14:53 JST', '16:00 JST']
UTC ('UTC', 'UTC') 0 ['05:53 UTC', '07:00 UTC']
('UTC', 'UTC') 0
`, res.Output)

	// Without TZ, local time is UTC (there is no /etc/localtime).
	res = run(t, "import time\nprint(time.tzname, time.timezone, time.strftime('%Z', time.localtime(0)))\n", nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "('UTC', 'UTC') 0 UTC\n", res.Output)
}

// TestStrictLzma: liblzma is linked in: lzma and the .xz files of tarfile
// round-trip.
func TestStrictLzma(t *testing.T) {
	res := run(t, `
import io, lzma, tarfile
data = ("hermes " * 5000).encode()
for fmt in (lzma.FORMAT_XZ, lzma.FORMAT_ALONE):
    packed = lzma.compress(data, format=fmt)
    assert lzma.decompress(packed) == data and len(packed) < 400, (fmt, len(packed))
with lzma.open("log.xz", "wt") as f:
    f.write("line\n" * 1000)
with lzma.open("log.xz", "rt") as f:
    assert f.read().count("line") == 1000
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:xz") as tar:
    info = tarfile.TarInfo("a.txt")
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
buf.seek(0)
with tarfile.open(fileobj=buf, mode="r:xz") as tar:
    assert tar.extractfile("a.txt").read() == data
print(lzma.is_check_supported(lzma.CHECK_SHA256), open("log.xz", "rb").read(6))
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "True b'\\xfd7zXZ\\x00'\n", res.Output)
}
