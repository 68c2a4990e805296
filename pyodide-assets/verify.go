package pyodideassets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Verify checks that b is the pinned stripped interpreter: first its length
// against [Size], then its sha256 against [SHA256]. A mismatch is reported as
// a *[VerifyError], which wraps [ErrCorrupt].
func Verify(b []byte) error {
	return verifyPin(b, "python.wasm", Size, SHA256)
}

// VerifyStdlib checks that b is the pinned standard library zip.
func VerifyStdlib(b []byte) error {
	return verifyPin(b, StdlibName, StdlibSize, StdlibSHA256)
}

// verifyPin checks b against a pinned size and hex sha256; what names the
// file in the error.
func verifyPin(b []byte, what string, size int, sum string) error {
	if len(b) != size {
		return &VerifyError{
			What: what + " size",
			Want: strconv.Itoa(size) + " bytes",
			Got:  strconv.Itoa(len(b)) + " bytes",
		}
	}
	got := sha256.Sum256(b)
	if gotHex := hex.EncodeToString(got[:]); gotHex != sum {
		return &VerifyError{What: what + " sha256", Want: sum, Got: gotHex}
	}
	return nil
}

// Check verifies the committed build in dist and the recipe against the
// pins: python.wasm and the standard library zip against their sha256 and
// size, and [RecipeHash] against [RecipeSHA256], so a recipe changed
// without a rebuild and re-pin is caught. It reads two files and hashes
// them: well under a second, no root, no network. Every mismatch is
// reported, each with what to do.
func Check(dist string) error {
	var errs []error
	if got := RecipeHash(); got != RecipeSHA256 {
		errs = append(errs, fmt.Errorf("pyodideassets: the recipe in pyodide-assets/cpython changed (recipe hash %s, the committed build is from %s): "+
			"rebuild and re-pin with `%s REPIN=1`, then commit pyodide-assets/dist and the new pins in pyodide-assets/assets.go; "+
			"to drop the change instead: git checkout -- pyodide-assets/cpython", got[:16], RecipeSHA256[:16], RebuildCommand))
	}
	if err := verifyDir(dist); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// verifyDir checks python.wasm and the stdlib zip in dir against the pins
// and reports every problem, a missing file wrapping [ErrMissing].
func verifyDir(dir string) error {
	check := func(name string, verify func([]byte) error) error {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return &missingError{fmt.Sprintf("pyodideassets: %s does not exist (it is a committed file): restore it with `%s` or rebuild it with `%s`", p, RestoreCommand, RebuildCommand)}
		}
		if err != nil {
			return fmt.Errorf("pyodideassets: %w", err)
		}
		if err := verify(b); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	}
	return errors.Join(check("python.wasm", Verify), check(StdlibName, VerifyStdlib))
}
