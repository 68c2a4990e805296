// Package assetbuild rebuilds the committed interpreter from its recipe:
// the Debian toolchain check and install, the recipe runner (cpython/build.sh),
// the custom-section strip and the loop-check rewriter. Only the command
// pyodide-assets/build (`make assets-rebuild`) uses it; the run-time package
// pyodideassets embeds and verifies the result and never runs a build.
package assetbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	pyodideassets "github.com/hermes-agent/hermes-wasm-exec/pyodide-assets"
)

// recipeVar returns a variable of recipe.env (a shell file of NAME=value
// and NAME="value" lines).
func recipeVar(name string) string {
	b, _ := fs.ReadFile(pyodideassets.Recipe(), "cpython/recipe.env")
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		v, ok := strings.CutPrefix(line, name+"=")
		if !ok {
			continue
		}
		if !strings.HasPrefix(v, `"`) {
			return v
		}
		v = v[1:]
		for j := i + 1; !strings.Contains(v, `"`) && j < len(lines); j++ {
			v += "\n" + lines[j]
		}
		v, _, _ = strings.Cut(v, `"`)
		return strings.TrimSpace(v)
	}
	return ""
}

// BuildOptions configures [Build].
type BuildOptions struct {
	// Dist is the directory the package embeds (pyodide-assets/dist).
	Dist string
	// Log receives what Build does: the commands it runs and the build's
	// progress.
	Log io.Writer
	// Install lets Build install missing toolchain packages with apt-get
	// (as root). Without it a missing package is an error naming the
	// command to run.
	Install bool
	// Repin accepts a build whose hashes differ from the pins, writes it to
	// Dist and prints the new pins to commit, for a deliberate change of the
	// recipe.
	Repin bool
}

// Build rebuilds the interpreter and its standard library from source and
// checks that the result is byte for byte the pinned build: toolchain and
// source packages from Debian (installed when missing, see
// [BuildOptions.Install]), then cpython/build.sh, then the debug sections
// are stripped and the loop checks added ([addLoopChecks]). A build that
// differs from the pins is an error (the recipe or the toolchain changed),
// unless [BuildOptions.Repin]. Dist is written only with verified bytes (or,
// with Repin, the new build), each file through a temporary name and a
// rename, so a damaged dist is restored and a failed build changes nothing.
func Build(ctx context.Context, opts BuildOptions) error {
	logf := func(format string, args ...any) { fmt.Fprintf(opts.Log, "assets: "+format+"\n", args...) }
	c, err := openChroot(ctx, opts, logf)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := extractRecipe(filepath.Join(c.Dir, "recipe")); err != nil {
		return err
	}
	recipe := pyodideassets.RecipeHash()
	logf("building CPython for wasm32-wasi (recipe %s; about 3 minutes on 2 cores)", recipe[:16])
	start := time.Now()
	if err := c.Run(ctx, "bash", "/recipe/cpython/build.sh", "/out"); err != nil {
		// build.sh keeps its work dir after a failure: moved out of the
		// chroot (which is removed), for its logs.
		os.RemoveAll(failedWork)
		if os.Rename(filepath.Join(c.Dir, failedWork), failedWork) == nil {
			return fmt.Errorf("%w (its sources and logs are in %s)", err, failedWork)
		}
		return err
	}
	out := filepath.Join(c.Dir, "out")
	raw, err := os.ReadFile(filepath.Join(out, "python.wasm"))
	if err != nil {
		return fmt.Errorf("assetbuild: build.sh wrote no python.wasm: %w", err)
	}
	wasm, err := stripCustomSections(raw)
	if err != nil {
		return err
	}
	if wasm, err = addLoopChecks(wasm); err != nil {
		return err
	}
	stdlib, err := os.ReadFile(filepath.Join(out, pyodideassets.StdlibName))
	if err != nil {
		return fmt.Errorf("assetbuild: build.sh wrote no %s: %w", pyodideassets.StdlibName, err)
	}
	logf("built in %s: python.wasm %d bytes (%d before stripping), %s %d bytes",
		time.Since(start).Round(time.Second), len(wasm), len(raw), pyodideassets.StdlibName, len(stdlib))
	if opts.Repin { // the pins in this binary are the old ones
		ws, ss := sha256.Sum256(wasm), sha256.Sum256(stdlib)
		if err := writeFiles(opts.Dist, wasm, stdlib); err != nil {
			return err
		}
		fmt.Fprintf(opts.Log, "wrote %s; the new pins for pyodide-assets/assets.go (commit them with dist):\n\tSHA256 = %q\n\tSize = %d\n\tStdlibSHA256 = %q\n\tStdlibSize = %d\n\tRecipeSHA256 = %q\n",
			opts.Dist, hex.EncodeToString(ws[:]), len(wasm), hex.EncodeToString(ss[:]), len(stdlib), recipe)
		return nil
	}
	if err := errors.Join(pyodideassets.Verify(wasm), pyodideassets.VerifyStdlib(stdlib)); err != nil {
		return fmt.Errorf("%w\nThe rebuild is not the committed build: the recipe or the toolchain changed. If the change is deliberate, run `%s REPIN=1` and commit the new pins with pyodide-assets/dist", err, pyodideassets.RebuildCommand)
	}
	logf("the rebuild is byte for byte the committed build (python.wasm %s…, %s %s…)", pyodideassets.SHA256[:12], pyodideassets.StdlibName, pyodideassets.StdlibSHA256[:12])
	if recipe != pyodideassets.RecipeSHA256 {
		logf("the recipe hash changed (%s, pinned %s) but the bytes did not: update pyodideassets.RecipeSHA256 in pyodide-assets/assets.go to %q", recipe[:16], pyodideassets.RecipeSHA256[:16], recipe)
	}
	if !sameFile(filepath.Join(opts.Dist, "python.wasm"), wasm) || !sameFile(filepath.Join(opts.Dist, pyodideassets.StdlibName), stdlib) {
		logf("restoring %s from the rebuild", opts.Dist)
		return writeFiles(opts.Dist, wasm, stdlib)
	}
	return nil
}

// sameFile reports whether the file at p holds exactly b.
func sameFile(p string, b []byte) bool {
	got, err := os.ReadFile(p)
	return err == nil && bytes.Equal(got, b)
}

// writeFiles writes the module and the standard library zip into dir.
func writeFiles(dir string, wasm, stdlib []byte) error {
	if err := writeFileAtomic(filepath.Join(dir, "python.wasm"), wasm); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, pyodideassets.StdlibName), stdlib)
}

// writeFileAtomic writes b to dest through a temporary file in the same
// directory (its name starts with "." so it is never embedded) and a
// rename.
func writeFileAtomic(dest string, b []byte) error {
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("assetbuild: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return fmt.Errorf("assetbuild: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	merr := f.Chmod(0o644)
	cerr := f.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("assetbuild: writing %s: %w", dest, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("assetbuild: writing %s: %w", dest, err)
	}
	return nil
}

// extractRecipe writes the embedded recipe into dir/cpython and returns
// that path: the build runs the recipe this binary was built with.
func extractRecipe(dir string) (string, error) {
	recipe := pyodideassets.Recipe()
	err := fs.WalkDir(recipe, "cpython", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dest := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dest, 0o755)
		}
		b, err := fs.ReadFile(recipe, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dest, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("assetbuild: writing the recipe: %w", err)
	}
	return filepath.Join(dir, "cpython"), nil
}

// failedWork is where a failed build's work dir (build.sh's, inside the
// chroot) is kept.
const failedWork = "/tmp/hermes-cpython-build"

// sourceVars are the variables of recipe.env that name the source packages
// build.sh fetches.
var sourceVars = []string{"SRC_PYTHON", "SRC_ZLIB", "SRC_BZIP2", "SRC_SQLITE", "SRC_XZ", "SRC_TZDATA", "SRC_WASI_LIBC"}
