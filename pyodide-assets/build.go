package pyodideassets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// recipeFS is the build recipe: build.sh, its pins (recipe.env), the
// built-in C module and the helpers. Its hash keys the build cache.
//
//go:embed cpython
var recipeFS embed.FS

// RecipeHash returns the hex sha256 of the recipe: every file under
// cpython/, by name and content, in name order. Any change to the recipe
// (a pinned version, a flag, the C module) changes it, and with it the
// cache entry that `make assets` looks for.
func RecipeHash() string {
	h := sha256.New()
	_ = fs.WalkDir(recipeFS, "cpython", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := recipeFS.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// recipeVar returns a variable of recipe.env (a shell file of NAME=value
// and NAME="value" lines).
func recipeVar(name string) string {
	b, _ := recipeFS.ReadFile("cpython/recipe.env")
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
	// CacheDir holds finished builds, one directory per recipe hash.
	CacheDir string
	// Log receives what Build does: the commands it runs and the build's
	// progress.
	Log io.Writer
	// Install lets Build install missing toolchain packages with apt-get
	// (as root). Without it a missing package is an error naming the
	// command to run.
	Install bool
	// Repin accepts a build whose hashes differ from the pins and prints
	// the new pins, for a deliberate change of the recipe.
	Repin bool
}

// DefaultCacheDir is where `make assets` keeps finished builds:
// $HERMES_ASSETS_CACHE, else the user cache dir's hermes-wasm-exec/cpython.
func DefaultCacheDir() string {
	if d := os.Getenv("HERMES_ASSETS_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "hermes-wasm-exec", "cpython")
}

// Build makes sure Dist holds the pinned interpreter and standard library.
// In order, it keeps files already in Dist that match the pins, copies a
// cached build for this recipe, or builds from source: toolchain and
// source packages from Debian (installed when missing, see
// [BuildOptions.Install]), then cpython/build.sh, then the debug sections
// are stripped and the loop checks added ([AddLoopChecks]). The result is
// verified against the pins, cached, and only then written to Dist.
func Build(ctx context.Context, opts BuildOptions) error {
	logf := func(format string, args ...any) { fmt.Fprintf(opts.Log, "assets: "+format+"\n", args...) }
	if !opts.Repin && verifyDir(opts.Dist) == nil {
		logf("%s is up to date (python.wasm %s…, %s %s…)", opts.Dist, SHA256[:12], StdlibName, StdlibSHA256[:12])
		return nil
	}
	key := RecipeHash()[:16]
	cached := filepath.Join(opts.CacheDir, key)
	if !opts.Repin && verifyDir(cached) == nil {
		logf("using the cached build %s", cached)
		return installDir(cached, opts.Dist)
	}
	if err := ensureToolchain(ctx, opts, logf); err != nil {
		return err
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return fmt.Errorf("pyodideassets: cache dir: %w", err)
	}
	out, err := os.MkdirTemp(opts.CacheDir, ".build-")
	if err != nil {
		return fmt.Errorf("pyodideassets: cache dir: %w", err)
	}
	defer os.RemoveAll(out)

	script, err := extractRecipe(out)
	if err != nil {
		return err
	}
	logf("building CPython for wasm32-wasi (recipe %s; about 3 minutes on 2 cores)", key)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(script, "build.sh"), filepath.Join(out, "raw"))
	cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pyodideassets: cpython/build.sh failed: %w (its logs are under /tmp/hermes-cpython-build)", err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "raw", "python.wasm"))
	if err != nil {
		return fmt.Errorf("pyodideassets: build.sh wrote no python.wasm: %w", err)
	}
	wasm, err := StripCustomSections(raw)
	if err != nil {
		return err
	}
	if wasm, err = AddLoopChecks(wasm); err != nil {
		return err
	}
	stdlib, err := os.ReadFile(filepath.Join(out, "raw", StdlibName))
	if err != nil {
		return fmt.Errorf("pyodideassets: build.sh wrote no %s: %w", StdlibName, err)
	}
	logf("built in %s: python.wasm %d bytes (%d before stripping), %s %d bytes",
		time.Since(start).Round(time.Second), len(wasm), len(raw), StdlibName, len(stdlib))
	if opts.Repin { // the pins in this binary are the old ones
		ws, ss := sha256.Sum256(wasm), sha256.Sum256(stdlib)
		fmt.Fprintf(opts.Log, "new pins for pyodide-assets/assets.go:\n\tSHA256 = %q\n\tSize = %d\n\tStdlibSHA256 = %q\n\tStdlibSize = %d\n",
			hex.EncodeToString(ws[:]), len(wasm), hex.EncodeToString(ss[:]), len(stdlib))
		return writeFiles(opts.Dist, wasm, stdlib)
	}
	if err := errors.Join(Verify(wasm), VerifyStdlib(stdlib)); err != nil {
		return fmt.Errorf("%w\nThe build is not the pinned one: the recipe or the toolchain changed. If the change is deliberate, run `go run ./pyodide-assets/build -repin` and commit the new pins", err)
	}
	done := filepath.Join(out, "done")
	if err := writeFiles(done, wasm, stdlib); err != nil {
		return err
	}
	os.RemoveAll(cached)
	if err := os.Rename(done, cached); err != nil {
		return fmt.Errorf("pyodideassets: caching the build: %w", err)
	}
	logf("cached in %s", cached)
	return installDir(cached, opts.Dist)
}

// verifyDir checks python.wasm and the stdlib zip in dir against the pins.
func verifyDir(dir string) error {
	wasm, err := os.ReadFile(filepath.Join(dir, "python.wasm"))
	if err != nil {
		return err
	}
	if err := Verify(wasm); err != nil {
		return err
	}
	stdlib, err := os.ReadFile(filepath.Join(dir, StdlibName))
	if err != nil {
		return err
	}
	return VerifyStdlib(stdlib)
}

// writeFiles writes the module and the standard library zip into dir.
func writeFiles(dir string, wasm, stdlib []byte) error {
	if err := WriteFileAtomic(filepath.Join(dir, "python.wasm"), wasm); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, StdlibName), stdlib)
}

// installDir copies the verified pair from src into dist, each file
// through a temporary name and a rename, so dist never holds half a file.
func installDir(src, dist string) error {
	if err := verifyDir(src); err != nil {
		return err
	}
	for _, name := range []string{"python.wasm", StdlibName} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := WriteFileAtomic(filepath.Join(dist, name), b); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic writes b to dest through a temporary file in the same
// directory (its name starts with "." so it is never embedded) and a
// rename.
func WriteFileAtomic(dest string, b []byte) error {
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pyodideassets: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return fmt.Errorf("pyodideassets: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	merr := f.Chmod(0o644)
	cerr := f.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pyodideassets: writing %s: %w", dest, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pyodideassets: writing %s: %w", dest, err)
	}
	return nil
}

// extractRecipe writes the embedded recipe into dir/cpython and returns
// that path: the build runs the recipe this binary was built with.
func extractRecipe(dir string) (string, error) {
	err := fs.WalkDir(recipeFS, "cpython", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dest := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dest, 0o755)
		}
		b, err := recipeFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dest, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("pyodideassets: writing the recipe: %w", err)
	}
	return filepath.Join(dir, "cpython"), nil
}

// ensureToolchain checks the pinned toolchain packages and the deb-src
// entries for the source packages, and installs what is missing when
// allowed, printing each command first.
func ensureToolchain(ctx context.Context, opts BuildOptions, logf func(string, ...any)) error {
	var missing []string
	for _, pkg := range strings.Fields(recipeVar("TOOLCHAIN")) {
		name, want, pinned := strings.Cut(pkg, "=")
		got, _ := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status} ${Version}", name).Output()
		version, installed := strings.CutPrefix(string(got), "install ok installed ")
		if !installed || (pinned && version != want) {
			missing = append(missing, pkg)
		}
	}
	var sources []string
	for _, name := range sourceVars {
		sources = append(sources, strings.Fields(recipeVar(name))...)
	}
	needSrc := !haveSources(ctx, sources)
	if len(missing) == 0 && !needSrc {
		return nil
	}
	run := [][]string{}
	if needSrc {
		run = append(run, []string{"write", debSrcFile}, []string{"apt-get", "update"})
	} else if len(missing) > 0 {
		run = append(run, []string{"apt-get", "update"})
	}
	if len(missing) > 0 {
		run = append(run, append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, missing...))
	}
	if !opts.Install || os.Geteuid() != 0 {
		var b strings.Builder
		for _, c := range run {
			if c[0] == "write" {
				fmt.Fprintf(&b, "\n  (add deb-src entries for %s, as in %s)", recipeVar("DEBIAN_SUITE"), c[1])
				continue
			}
			fmt.Fprintf(&b, "\n  sudo %s", strings.Join(c, " "))
		}
		return fmt.Errorf("pyodideassets: the build needs Debian packages that are not installed (%s) or source entries that are missing; run as root, or run:%s",
			strings.Join(missing, " "), b.String())
	}
	for _, c := range run {
		if c[0] == "write" {
			logf("writing %s (deb-src entries for the %s source packages)", c[1], recipeVar("DEBIAN_SUITE"))
			if err := os.WriteFile(c[1], []byte(debSrcEntries()), 0o644); err != nil {
				return fmt.Errorf("pyodideassets: %w", err)
			}
			continue
		}
		logf("running: %s", strings.Join(c, " "))
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("pyodideassets: %s: %w", strings.Join(c, " "), err)
		}
	}
	if !haveSources(ctx, sources) {
		return fmt.Errorf("pyodideassets: Debian does not serve the pinned source packages %s any more; update pyodide-assets/cpython/recipe.env and re-pin", strings.Join(sources, " "))
	}
	return nil
}

// sourceVars are the variables of recipe.env that name the source packages
// build.sh fetches.
var sourceVars = []string{"SRC_PYTHON", "SRC_ZLIB", "SRC_BZIP2", "SRC_SQLITE", "SRC_XZ", "SRC_TZDATA", "SRC_WASI_LIBC"}

// debSrcFile is where Build adds deb-src entries when apt has none.
const debSrcFile = "/etc/apt/sources.list.d/hermes-wasm-exec-src.sources"

func debSrcEntries() string {
	suite := recipeVar("DEBIAN_SUITE")
	return "# Added by hermes-wasm-exec's `make assets`: the interpreter is built from Debian source packages.\n" +
		"Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: " + suite + " " + suite + "-updates\nComponents: main\n" +
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n" +
		"Types: deb-src\nURIs: http://deb.debian.org/debian-security\nSuites: " + suite + "-security\nComponents: main\n" +
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
}

// haveSources reports whether apt knows every pinned source package
// version (name=version).
func haveSources(ctx context.Context, pins []string) bool {
	for _, pin := range pins {
		name, version, _ := strings.Cut(pin, "=")
		out, err := exec.CommandContext(ctx, "apt-cache", "showsrc", "--only-source", name).Output()
		if err != nil {
			return false
		}
		found := false
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if strings.TrimSpace(strings.TrimPrefix(sc.Text(), "Version:")) == version && strings.HasPrefix(sc.Text(), "Version:") {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
