// Package pyodideassets holds the Python interpreter that the executor runs
// inside wazero: CPython 3.13 compiled for wasm32-wasi by this project's own
// recipe (cpython/), from Debian's source packages with Debian trixie's clang-19
// toolchain at -O2, with zlib, bzip2, liblzma, SQLite and musl's time zone
// code linked in, the IANA time zone database in its standard library, and a
// built-in module (_hermes_host) that calls the host's tool functions.
//
// The package has three parts:
//
//   - the committed build: dist/python.wasm and dist/python313.zip are in
//     the repository, so `go build`, `go install` and `go get` give a
//     working strict mode with no other step; the constants below pin their
//     sha256 and size, and [RecipeSHA256] pins the recipe they were built
//     from;
//   - the embedding: dist's two files are embedded into the binary, and
//     [Interpreter] and [Stdlib] return the embedded files (length-checked;
//     [VerifyLoaded] hashes them) without copying them;
//   - the provenance: the recipe (cpython/, embedded, so a binary can
//     rebuild what it runs: [Recipe], [RecipeHash]) and [Check] (the
//     committed files and the recipe against the pins: "make assets",
//     seconds, no root). The rebuild from Debian's sources, which must give
//     the committed bytes ("make assets-rebuild"), lives in
//     internal/assetbuild with the toolchain install, the recipe runner and
//     the loop-check rewriter; nothing at run time imports it.
//
// The directory is named pyodide-assets because the product's layout reserves
// that name for the browser-style Python-in-wasm asset bundle; the WASI
// CPython build plays that role here. It contains no Pyodide.
package pyodideassets

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/hermes-agent/hermes-wasm-exec/internal/humanpath"
)

// Description says what the interpreter is, for `doctor`.
const Description = "CPython 3.13.5 (Debian python3.13 3.13.5-2+deb13u5 sources) for wasm32-wasi, clang-19 -O2, with zlib, bzip2, liblzma 5.4.1, SQLite 3.40.1 and the IANA time zone database 2026b"

// SHA256 is the hex sha256 of the interpreter module (debug sections
// stripped): the bytes that are embedded and that [Interpreter] returns.
const SHA256 = "b1ffc1d5d973089583b059bfce78aaaa9369f0e455aaa99a8398c6aa5edf2e9d"

// Size is the size in bytes of the interpreter module.
const Size = 8501034

// StdlibName is the standard library zip's file name, in dist and in the
// guest, where it is mounted read-only at /usr/local/lib.
const StdlibName = "python313.zip"

// StdlibSHA256 is the hex sha256 of the standard library zip.
const StdlibSHA256 = "02389ed6a6bf021134cbd552db4bb3445b73d6e5fc19e6ef5346be7c65efee08"

// StdlibSize is the size in bytes of the standard library zip.
const StdlibSize = 4681880

// RecipeSHA256 is [RecipeHash] of the recipe the committed files were built
// from. [Check] fails when the recipe changed without a rebuild and re-pin.
const RecipeSHA256 = "a78f851167e0684f240a112b89cb84850b0eeee1c970c838683a5921d1c98dd8"

// RestoreCommand puts back the committed files of dist when they were
// deleted or changed in a checkout; error messages name it.
const RestoreCommand = "git checkout -- pyodide-assets/dist"

// RebuildCommand rebuilds the files of dist from Debian's sources and
// checks that the bytes equal the pins ([Build]).
const RebuildCommand = "make assets-rebuild"

// InterpreterEnv is the environment variable that, when set to a file path,
// makes [Interpreter] read the interpreter from that file instead of the
// embedded copy, and [Stdlib] read StdlibName from the same directory.
// Tests use it, and so can deployments that keep the files outside the
// binary. Both are verified against the pins like the embedded ones.
const InterpreterEnv = "HERMES_WASM_INTERPRETER"

// The two committed files of dist, embedded as strings: the data stays in
// the binary's read-only pages, and [Interpreter] and [Stdlib] hand it out
// without copying 13 MB onto the heap (an embed.FS read copies: ~14 ms of
// a one-shot run). A checkout without them does not build ("pattern
// dist/python.wasm: no matching files found"); restore them with
// [RestoreCommand].
var (
	//go:embed dist/python.wasm
	embeddedWasm string
	//go:embed dist/python313.zip
	embeddedStdlib string
)

// embeddedAsset returns the embedded dist/name, sharing the binary's
// read-only copy: writing to it faults.
func embeddedAsset(name string) ([]byte, error) {
	var s string
	switch name {
	case "dist/python.wasm":
		s = embeddedWasm
	case "dist/" + StdlibName:
		s = embeddedStdlib
	default:
		return nil, fs.ErrNotExist
	}
	return unsafe.Slice(unsafe.StringData(s), len(s)), nil
}

var (
	// ErrMissing reports that the interpreter is not available: the
	// committed files were missing from dist when this binary was built, or
	// the file named by InterpreterEnv does not exist.
	ErrMissing = errors.New("pyodideassets: the Python interpreter is missing (pyodide-assets/dist/python.wasm and " + StdlibName +
		" are committed files): restore them with `" + RestoreCommand + "` or rebuild them with `" + RebuildCommand + "`, then rebuild the binary")

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
// the expected and actual values and says how to get the pinned file back.
func (e *VerifyError) Error() string {
	return fmt.Sprintf("pyodideassets: %s mismatch, the file is corrupt or truncated: want %s, got %s; restore the committed file with `%s` or rebuild it with `%s`, then rebuild the binary",
		e.What, e.Want, e.Got, RestoreCommand, RebuildCommand)
}

// Unwrap returns [ErrCorrupt], so errors.Is(err, ErrCorrupt) holds.
func (e *VerifyError) Unwrap() error { return ErrCorrupt }

// missingError is a missing file with its own remedy; it wraps [ErrMissing]
// without repeating ErrMissing's text (which is about the embedded files).
type missingError struct{ msg string }

func (e *missingError) Error() string { return e.msg }
func (e *missingError) Unwrap() error { return ErrMissing }

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
		interpBytes, interpErr = loadInterpreter(os.Getenv(InterpreterEnv), embeddedAsset)
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
		stdlibBytes, stdlibErr = loadAsset(override, embeddedAsset, StdlibName, VerifyStdlib)
	})
	return stdlibBytes, stdlibErr
}

// loadInterpreter is the uncached body of Interpreter.
func loadInterpreter(override string, embedded func(name string) ([]byte, error)) ([]byte, error) {
	return loadAsset(override, embedded, "python.wasm", Verify)
}

// loadAsset reads one asset from override when that is non-empty, else
// dist/name from embedded, and verifies it.
func loadAsset(override string, embedded func(name string) ([]byte, error), name string, verify func([]byte) error) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if override != "" {
		b, err = os.ReadFile(override)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &missingError{fmt.Sprintf("pyodideassets: %s %s (from %s) does not exist: point %s at a python.wasm with %s beside it, or unset it to use the embedded interpreter",
				name, humanpath.Quote(override), InterpreterEnv, InterpreterEnv, StdlibName)}
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading %s %s (from %s): %w", name, humanpath.Quote(override), InterpreterEnv, err)
		}
	} else {
		b, err = embedded("dist/" + name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrMissing
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading embedded %s: %w", name, err)
		}
	}
	if override == "" {
		// The binary is the unit of integrity: the embedded copy's sha256
		// is checked by make assets, the tests and doctor (VerifyLoaded),
		// not on every start (about 11 ms of a one-shot run). A length
		// check still catches a truncated embed.
		if err := verifySize(b, name); err != nil {
			return nil, err
		}
		return b, nil
	}
	if err := verify(b); err != nil {
		return nil, fmt.Errorf("pyodideassets: %s %s (from %s): %w", name, humanpath.Quote(override), InterpreterEnv, err)
	}
	return b, nil
}

// verifySize checks the length of an embedded asset against its pin.
func verifySize(b []byte, name string) error {
	size := Size
	if name == StdlibName {
		size = StdlibSize
	}
	if len(b) != size {
		return &VerifyError{What: name + " size", Want: fmt.Sprint(size) + " bytes", Got: fmt.Sprint(len(b)) + " bytes"}
	}
	return nil
}

// VerifyLoaded checks the interpreter and standard library this process
// uses (embedded, or from $HERMES_WASM_INTERPRETER) against their pinned
// sha256, as doctor reports them. Loading an embedded copy checks only its
// length; a file from $HERMES_WASM_INTERPRETER is fully checked when it is
// loaded.
func VerifyLoaded() error {
	wasm, err := Interpreter()
	if err != nil {
		return err
	}
	lib, err := Stdlib()
	if err != nil {
		return err
	}
	return errors.Join(Verify(wasm), VerifyStdlib(lib))
}
