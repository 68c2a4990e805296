// Package pyodideassets holds the Python interpreter that the executor runs
// inside wazero: CPython 3.11 compiled for wasm32-wasi by this project's own
// recipe (cpython/), from Debian's source packages with Debian's clang-19
// toolchain at -O2, with zlib, bzip2, liblzma, SQLite and musl's time zone
// code linked in, the IANA time zone database in its standard library, and a built-in
// module (_hermes_host) that calls the host's tool functions.
//
// The package has three parts:
//
//   - the recipe and its pins: cpython/ (embedded, so a binary can rebuild
//     what it runs) and the constants below, the sha256 and size of the
//     stripped module and of the standard library zip;
//   - the build step: [Build] installs the pinned toolchain, runs the recipe,
//     strips the module's debug sections, adds its loop checks, verifies both against the pins and caches them by [RecipeHash] ("make
//     assets" runs it);
//   - the embedding: the directory dist is embedded into the binary, and
//     [Interpreter] and [Stdlib] return the embedded files after verifying
//     them against the pins.
//
// The built files are never committed. On a fresh clone dist holds only a
// README, so the code builds everywhere, and [Interpreter] returns an error
// wrapping [ErrMissing] until "make assets" has been run and the binary
// rebuilt.
//
// The directory is named pyodide-assets because the product's layout reserves
// that name for the browser-style Python-in-wasm asset bundle; the WASI
// CPython build plays that role here. It contains no Pyodide.
package pyodideassets

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Description says what the interpreter is, for `doctor`.
const Description = "CPython 3.11.2 (Debian python3.11 3.11.2-6+deb12u8 sources) for wasm32-wasi, clang-19 -O2, with zlib, bzip2, liblzma 5.4.1, SQLite 3.40.1 and the IANA time zone database 2026b"

// SHA256 is the hex sha256 of the interpreter module (debug sections
// stripped): the bytes that are embedded and that [Interpreter] returns.
const SHA256 = "4c9995071f0ffac2b0967de5b533484f6f89faa51535aa9419138f2beab8e113"

// Size is the size in bytes of the interpreter module.
const Size = 8442486

// StdlibName is the standard library zip's file name, in dist and in the
// guest, where it is mounted read-only at /usr/local/lib.
const StdlibName = "python311.zip"

// StdlibSHA256 is the hex sha256 of the standard library zip.
const StdlibSHA256 = "f4378b53d28fca97b7253223eb772cf7790757d3dba573105281bc735d84e3c7"

// StdlibSize is the size in bytes of the standard library zip.
const StdlibSize = 5031720

// FetchCommand is the command that builds (or takes from the cache) the
// interpreter into dist; error messages tell the user to run it.
const FetchCommand = "make assets"

// InterpreterEnv is the environment variable that, when set to a file path,
// makes [Interpreter] read the interpreter from that file instead of the
// embedded copy, and [Stdlib] read StdlibName from the same directory.
// Tests use it, and so can deployments that keep the files outside the
// binary. Both are verified against the pins like the embedded ones.
const InterpreterEnv = "HERMES_WASM_INTERPRETER"

// distFS embeds the directory dist. It always holds README.md, so the build
// works before the build; it holds python.wasm and the standard library zip
// once "make assets" has run. Files whose names begin with "." or "_" (such
// as the temporary files of an interrupted install) are never embedded.
//
//go:embed dist
var distFS embed.FS

var (
	// ErrMissing reports that the interpreter is not available: it was not
	// built before this binary was, or the file named by InterpreterEnv
	// does not exist.
	ErrMissing = errors.New("pyodideassets: the Python interpreter has not been built: run `" + FetchCommand + "`, then rebuild")

	// ErrCorrupt reports that interpreter bytes do not match the pin or are
	// not a well-formed module. Every *VerifyError wraps it.
	ErrCorrupt = errors.New("pyodideassets: the Python interpreter is corrupt or truncated")
)

// VerifyError reports that a file does not match its pin. It wraps
// [ErrCorrupt].
type VerifyError struct {
	// What names the file and the property that was checked, for example
	// "python.wasm sha256".
	What string
	// Want is the pinned value.
	Want string
	// Got is the value that was found.
	Got string
}

// Error returns a message that says the file is corrupt or truncated, gives
// the expected and actual values and tells the user to run `make assets`.
func (e *VerifyError) Error() string {
	return fmt.Sprintf("pyodideassets: %s mismatch, the file is corrupt or truncated: want %s, got %s; re-run `%s` (then rebuild)",
		e.What, e.Want, e.Got, FetchCommand)
}

// Unwrap returns [ErrCorrupt], so errors.Is(err, ErrCorrupt) holds.
func (e *VerifyError) Unwrap() error { return ErrCorrupt }

var (
	interpOnce  sync.Once
	interpBytes []byte
	interpErr   error
	stdlibOnce  sync.Once
	stdlibBytes []byte
	stdlibErr   error
)

// Interpreter returns the stripped interpreter module, verified against
// [SHA256] and [Size]. The module is read and verified once per process; the
// bytes and any error are cached and returned by every later call.
//
// By default the module is the copy embedded at build time. If the
// environment variable named by [InterpreterEnv] (HERMES_WASM_INTERPRETER)
// is set to a non-empty path, that file is read instead and verified the same
// way. A missing module, embedded or not, gives an error wrapping
// [ErrMissing]; a module that does not match the pin gives a *[VerifyError]
// wrapping [ErrCorrupt].
//
// The returned slice is shared between callers and must not be modified.
func Interpreter() ([]byte, error) {
	interpOnce.Do(func() {
		interpBytes, interpErr = loadAsset(os.Getenv(InterpreterEnv), distFS, "python.wasm", Verify)
	})
	return interpBytes, interpErr
}

// Stdlib returns the standard library zip ([StdlibName]), verified against
// [StdlibSHA256] and [StdlibSize], read once per process like
// [Interpreter]: embedded, or from the directory of $HERMES_WASM_INTERPRETER.
func Stdlib() ([]byte, error) {
	stdlibOnce.Do(func() {
		override := os.Getenv(InterpreterEnv)
		if override != "" {
			override = filepath.Join(filepath.Dir(override), StdlibName)
		}
		stdlibBytes, stdlibErr = loadAsset(override, distFS, StdlibName, VerifyStdlib)
	})
	return stdlibBytes, stdlibErr
}

// loadInterpreter is the uncached body of Interpreter.
func loadInterpreter(override string, embedded fs.FS) ([]byte, error) {
	return loadAsset(override, embedded, "python.wasm", Verify)
}

// loadAsset reads one asset from override when that is non-empty, else
// dist/name from embedded, and verifies it.
func loadAsset(override string, embedded fs.FS, name string, verify func([]byte) error) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if override != "" {
		b, err = os.ReadFile(override)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pyodideassets: %s %q (from %s) does not exist: %w", name, override, InterpreterEnv, ErrMissing)
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading %s %q (from %s): %w", name, override, InterpreterEnv, err)
		}
	} else {
		b, err = fs.ReadFile(embedded, "dist/"+name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrMissing
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading embedded %s: %w", name, err)
		}
	}
	if err := verify(b); err != nil {
		if override != "" {
			return nil, fmt.Errorf("pyodideassets: %s %q (from %s): %w", name, override, InterpreterEnv, err)
		}
		return nil, err
	}
	return b, nil
}
