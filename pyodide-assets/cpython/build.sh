#!/usr/bin/env bash
# Builds hermes-wasm-exec's WASI CPython from Debian source packages.
#
#   build.sh OUT_DIR
#
# Runs inside the Debian chroot that pyodide-assets/build -rebuild (`make
# assets-rebuild`) makes: recipe.env's TOOLCHAIN installed, deb-src entries
# for the suites of its source packages. Writes
# OUT_DIR/python.wasm (debug sections still in; the Go step strips them) and
# OUT_DIR/python313.zip (the standard library as .pyc, and the IANA time zone
# database as the package tzdata).
#
# Everything is built under one fixed path, /tmp/hermes-cpython-build, so
# that no machine-specific path reaches the output: two builds on two
# machines give the same bytes. A lock keeps two builds on one machine apart;
# the directory is removed after a successful build (KEEP_WORK=1 keeps it)
# and kept after a failed one, for its logs.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
# shellcheck source=recipe.env
. "$HERE/recipe.env"
export SOURCE_DATE_EPOCH
export LC_ALL=C TZ=UTC
umask 022

WORK=/tmp/hermes-cpython-build
JOBS="$(nproc)"
exec 9>"$WORK.lock"
flock 9
step() { printf '\n== %s\n' "$*" >&2; }

export CC="clang-19 --target=wasm32-wasi --sysroot=$WORK/sysroot"
export AR=llvm-ar-19 RANLIB=llvm-ranlib-19
PREFIX_MAP="-ffile-prefix-map=$WORK=/build"
DEP_CFLAGS="$OPT_FLAGS $PREFIX_MAP"

# BUILD_FROM=cpython reuses the sources and libraries of the last build in
# $WORK (kept with KEEP_WORK=1) and starts at CPython's configure (for
# working on the recipe).
if [ "${BUILD_FROM:-}" != cpython ]; then
rm -rf "$WORK"
mkdir -p "$WORK/src" "$WORK/deps/include" "$WORK/deps/lib" "$WORK/sysroot/include" "$WORK/sysroot/lib"

# A private sysroot: only wasi-libc's headers and libraries, so nothing from
# the host's /usr/include or /usr/local/include can leak into the build.
ln -s /usr/include/wasm32-wasi "$WORK/sysroot/include/wasm32-wasi"
ln -s /usr/lib/wasm32-wasi "$WORK/sysroot/lib/wasm32-wasi"

step "fetching source packages"
cd "$WORK/src"
# shellcheck disable=SC2086
apt-get source --download-only $SRC_PYTHON $SRC_ZLIB $SRC_BZIP2 $SRC_SQLITE $SRC_XZ $SRC_TZDATA $SRC_WASI_LIBC
for pin in $DSC_SHA256; do
	file="${pin%%=*}" want="${pin#*=}"
	got="$(sha256sum "$file" | cut -d' ' -f1)"
	if [ "$got" != "$want" ]; then
		echo "build.sh: $file has sha256 $got, recipe.env pins $want" >&2
		exit 1
	fi
	# dpkg-source checks every tarball against the .dsc and applies Debian's patches.
	dpkg-source --no-copy -x "$file" "${file%%_*}" >/dev/null
done

step "zlib (static, wasm32-wasi)"
cd "$WORK/src/zlib"
for f in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate inftrees trees uncompr zutil; do
	$CC $DEP_CFLAGS -D_LARGEFILE64_SOURCE=1 -DHAVE_HIDDEN -c "$f.c" -o "$f.o"
done
$AR rcs "$WORK/deps/lib/libz.a" ./*.o
cp zlib.h zconf.h "$WORK/deps/include/"

step "bzip2 (static, wasm32-wasi)"
cd "$WORK/src/bzip2"
for f in blocksort huffman crctable randtable compress decompress bzlib; do
	$CC $DEP_CFLAGS -D_FILE_OFFSET_BITS=64 -c "$f.c" -o "$f.o"
done
$AR rcs "$WORK/deps/lib/libbz2.a" ./*.o
cp bzlib.h "$WORK/deps/include/"

step "xz-utils: liblzma (static, wasm32-wasi)"
cd "$WORK/src/xz-utils"
# mythread.h's sigprocmask helper (used by the xz program, not by liblzma)
# needs <signal.h>, which WASI lacks.
sed -i 's/^#if !(defined(_WIN32) \&\& !defined(__CYGWIN__))$/& \&\& !defined(__wasi__)/' src/common/mythread.h
CFLAGS="$DEP_CFLAGS" ./configure --host=wasm32-unknown-wasi --build=x86_64-pc-linux-gnu \
	--enable-static --disable-shared --disable-threads --disable-nls --disable-rpath \
	--disable-xz --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links \
	--disable-scripts --disable-doc >configure.log 2>&1 || { tail -40 configure.log >&2; exit 1; }
make -s -j"$JOBS" -C src/liblzma >make.log 2>&1 || { tail -40 make.log >&2; exit 1; }
cp src/liblzma/.libs/liblzma.a "$WORK/deps/lib/"
cp -r src/liblzma/api/lzma.h src/liblzma/api/lzma "$WORK/deps/include/"

step "time zones: musl's tz code for wasi-libc, the tz database compiled by zic"
cd "$WORK/src/wasi-libc"
patch -p1 --quiet < "$HERE/wasi-libc-tz.patch"
MUSL=libc-top-half/musl
# shellcheck disable=SC2086
$CC $DEP_CFLAGS -std=c99 -D_XOPEN_SOURCE=700 -I$MUSL/src/include -I$MUSL/src/internal -I$MUSL/src/time \
	-c $MUSL/src/time/__tz.c -o hermes_tz.o
$AR rcs "$WORK/deps/lib/libhermes_tz.a" hermes_tz.o
cp "$HERE/hermes_tz.h" "$WORK/deps/include/"
# As Debian's tzdata package builds it (debian/rules): backward links and
# the pre-1970 data of backzone for the zones of zone.tab, no leap seconds;
# "fat" files, which every TZif reader understands.
cd "$WORK/src/tzdata"
make -s AWK=mawk BACKWARD=backward PACKRATDATA=backzone PACKRATLIST=zone.tab VERSION_DEPS= tzdata.zi
rm -rf "$WORK/zoneinfo"
/usr/sbin/zic -d "$WORK/zoneinfo" -b fat -L /dev/null tzdata.zi
cp tzdata.zi zone.tab zone1970.tab iso3166.tab "$WORK/zoneinfo/"

step "sqlite3 (amalgamation built natively, library for wasm32-wasi)"
cd "$WORK/src/sqlite3"
mkdir -p native && cd native
CC=gcc ../configure --disable-tcl >/dev/null
make -s sqlite3.c >/dev/null
SQLITE_FLAGS="-DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_WAL -DSQLITE_MAX_MMAP_SIZE=0 \
 -DSQLITE_ENABLE_FTS4 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_MATH_FUNCTIONS \
 -DSQLITE_ENABLE_COLUMN_METADATA -DSQLITE_DEFAULT_FOREIGN_KEYS=0 -D_WASI_EMULATED_GETPID -D_WASI_EMULATED_MMAN \
 -include $HERE/sqlite_wasi.h"
# shellcheck disable=SC2086
$CC $DEP_CFLAGS $SQLITE_FLAGS -c sqlite3.c -o sqlite3.o
$CC $DEP_CFLAGS -c "$HERE/sqlite_wasi.c" -o sqlite_wasi.o
$AR rcs "$WORK/deps/lib/libsqlite3.a" sqlite3.o sqlite_wasi.o
cp sqlite3.h "$WORK/deps/include/"
fi

step "CPython (wasm32-wasi, $OPT_FLAGS)"
cd "$WORK/src/python3.13"
cp "$HERE/hermes_host.c" Modules/_hermes_host.c
# asyncio's event loop without its socketpair self-pipe on WASI.
if [ "${BUILD_FROM:-}" != cpython ]; then
	patch -p1 --quiet < "$HERE/asyncio-wasi.patch"
fi
cp "$HERE/hermes_mem.c" Modules/_hermes_mem.c
# clang 19 ignores SOURCE_DATE_EPOCH for __DATE__/__TIME__: give the build
# info (sys.version) the recipe's date instead of the day of the build.
sed -i "1i #define DATE \"$(date -u -d "@$SOURCE_DATE_EPOCH" '+%b %d %Y')\"\n#define TIME \"$(date -u -d "@$SOURCE_DATE_EPOCH" '+%H:%M:%S')\"" Modules/getbuildinfo.c
rm -rf "$WORK/build" && mkdir -p "$WORK/build" && cd "$WORK/build"
DEPS="$WORK/deps"
# ac_cv_func_clock_nanosleep=no (in libc and librt): time.sleep then waits with a relative
#   nanosleep; with clock_nanosleep it asks WASI for an absolute-deadline
#   clock wait, which wazero does not implement ("Not supported").
# --with-pymalloc: CPython's small-object allocator, off by default on WASI,
#   is what makes allocation-heavy code (JSON, dicts) fast.
# hermes_tz.h and -lhermes_tz: tzset(), tzname, timezone and daylight, from
#   musl's time zone code (see wasi-libc-tz.patch); ac_cv_working_tzset=yes
#   (configure cannot run its test when cross-compiling) gives time.tzset().
# The linked libraries come from $DEPS only (PKG_CONFIG=false).
CONFIG_SITE="$WORK/src/python3.13/Tools/wasm/config.site-wasm32-wasi" \
OPT="$OPT_FLAGS" \
CFLAGS="$PREFIX_MAP -include $DEPS/include/hermes_tz.h" \
LIBS="-L$DEPS/lib -lhermes_tz" \
CPP="clang-cpp-19 --target=wasm32-wasi --sysroot=$WORK/sysroot" \
ZLIB_CFLAGS="-I$DEPS/include" ZLIB_LIBS="-L$DEPS/lib -lz" \
BZIP2_CFLAGS="-I$DEPS/include" BZIP2_LIBS="-L$DEPS/lib -lbz2" \
LIBLZMA_CFLAGS="-I$DEPS/include" LIBLZMA_LIBS="-L$DEPS/lib -llzma" \
LIBSQLITE3_CFLAGS="-I$DEPS/include" LIBSQLITE3_LIBS="-L$DEPS/lib -lsqlite3 -lwasi-emulated-getpid -lwasi-emulated-mman" \
PKG_CONFIG=false ac_cv_func_clock_nanosleep=no ac_cv_lib_rt_clock_nanosleep=no ac_cv_working_tzset=yes \
	../src/python3.13/configure -C \
	--host=wasm32-unknown-wasip1 --build=x86_64-pc-linux-gnu \
	--with-build-python=/usr/bin/python3.13 \
	--prefix=/usr/local \
	--disable-test-modules --without-ensurepip --with-pymalloc \
	>configure.log 2>&1 || { tail -40 configure.log >&2; exit 1; }
# The build dir's Setup.local (configure leaves it empty) makes the
# host-function tool channel a built-in module, and links the bulk-memory
# memcpy/memmove/memset (-fno-builtin: their own loops must stay loops, not
# become calls to themselves).
printf '%s\n' '# hermes-wasm-exec: the host-function tool channel, built in, and bulk-memory memcpy.' '_hermes_host _hermes_host.c _hermes_mem.c -fno-builtin' > Modules/Setup.local
# A WASI reactor, not a command: the host calls _initialize and then one of
# _hermes_host.c's entry points (hermes_main, or hermes_preinit/hermes_run
# around a snapshot of the initialised interpreter), not _start.
LINKFORSHARED="$(sed -n 's/^LINKFORSHARED=[[:space:]]*//p' Makefile) -mexec-model=reactor"
make -j"$JOBS" all LINKFORSHARED="$LINKFORSHARED" >make.log 2>&1 || { grep -E 'error|Error' make.log | head -40 >&2; tail -20 make.log >&2; exit 1; }
grep -E '^(Failed|The necessary|Following modules)' -A4 make.log >&2 || true
cp python.wasm "$OUT/python.wasm"

step "standard library (.pyc)"
/usr/bin/python3.13 -I "$HERE/mkstdlib.py" "$WORK/src/python3.13/Lib" "$WORK/build/$(cat pybuilddir.txt)" \
	"$WORK/zoneinfo" "$(sed -n 's/^# version //p' "$WORK/src/tzdata/tzdata.zi")" "$OUT/python313.zip"

if [ "${KEEP_WORK:-}" != 1 ]; then
	rm -rf "$WORK"
fi
