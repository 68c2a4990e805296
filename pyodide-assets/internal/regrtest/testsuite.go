package regrtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// The tests are CPython's own Lib/test, of the interpreter's version, as
// Debian ships them, built from the same source package as strict mode's
// interpreter (pyodide-assets/cpython/recipe.env, SRC_PYTHON): the test
// modules in libpython3.13-testsuite, and the package's own files
// (test/__init__.py, test.support, test.libregrtest) in
// libpython3.13-stdlib. Both are downloaded once into the user cache dir,
// checked against their pins, and their test/ trees unpacked together
// there; they are test-only and never reach the runtime zip or the binary.

// DebianVersion is the version of python3.13 the interpreter is built
// from, and of the test packages.
const DebianVersion = "3.13.5-2+deb13u5"

// debPackage is a pinned Debian binary package.
type debPackage struct {
	name, arch, sha256 string
}

func (p debPackage) file() string { return p.name + "_" + DebianVersion + "_" + p.arch + ".deb" }

func (p debPackage) url() string {
	return "http://deb.debian.org/debian/pool/main/p/python3.13/" + p.file()
}

// testPackages are the packages whose test/ trees make the test package.
var testPackages = []debPackage{
	{"libpython3.13-testsuite", "all", "214ce20bfec92a4419d6f07ca61fb5b6a730b6a2b249d060fd2e1f4ec4b171f2"},
	// Only its test/ dir is taken (pure Python, the same on every
	// architecture).
	{"libpython3.13-stdlib", "amd64", "db161322a3481d2c0c3b9a3b9a03c3ab0e2b1718f54b88755fb4a3f939165b84"},
}

// cacheDir is the dir of the test package and the native chroot.
func cacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("regrtest: no user cache dir for the test package and the chroot (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(base, "hermes-wasm-exec"), nil
}

// Testsuite returns a dir that holds CPython's `test` package and nothing
// else, downloading, checking and unpacking the packages first when the
// cache does not hold it.
func Testsuite(ctx context.Context, logf func(string, ...any)) (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	lib := filepath.Join(dir, "regrtest-python3.13-test_"+DebianVersion)
	if _, err := os.Stat(filepath.Join(lib, "test", "support", "__init__.py")); err == nil {
		return lib, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("regrtest: %w", err)
	}
	tmp := lib + ".tmp"
	os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("regrtest: %w", err)
	}
	for _, p := range testPackages {
		deb := filepath.Join(dir, p.file())
		if sum, err := fileSHA256(deb); err != nil || sum != p.sha256 {
			if err := download(ctx, p.url(), deb, logf); err != nil {
				return "", err
			}
		}
		sum, err := fileSHA256(deb)
		if err != nil {
			return "", fmt.Errorf("regrtest: %w", err)
		}
		if sum != p.sha256 {
			os.Remove(deb)
			return "", fmt.Errorf("regrtest: %s has sha256 %s, want %s (testPackages): the download is damaged or Debian replaced the package; run again, and if it persists check the mirror before changing the pin", p.url(), sum, p.sha256)
		}
		unpacked := filepath.Join(tmp, p.name)
		logf("running: dpkg-deb -x %s %s", deb, unpacked)
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, unpacked).CombinedOutput(); err != nil {
			return "", fmt.Errorf("regrtest: dpkg-deb -x %s: %w: %s (install dpkg: sudo apt-get install dpkg)", deb, err, strings.TrimSpace(string(out)))
		}
		src := filepath.Join(unpacked, "usr", "lib", "python3.13", "test") + "/."
		logf("running: cp -a %s %s", src, filepath.Join(tmp, "test"))
		if out, err := exec.CommandContext(ctx, "cp", "-a", src, filepath.Join(tmp, "test")).CombinedOutput(); err != nil {
			return "", fmt.Errorf("regrtest: cp -a %s: %w: %s", src, err, strings.TrimSpace(string(out)))
		}
		if err := os.RemoveAll(unpacked); err != nil {
			return "", fmt.Errorf("regrtest: %w", err)
		}
	}
	os.RemoveAll(lib)
	if err := os.Rename(tmp, lib); err != nil {
		return "", fmt.Errorf("regrtest: %w", err)
	}
	return lib, nil
}

// download fetches url into path, printing it first.
func download(ctx context.Context, url, path string, logf func(string, ...any)) error {
	logf("downloading %s", url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("regrtest: download %s: %w (the test package comes from deb.debian.org: check the network)", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("regrtest: download %s: %s (a 404 means Debian no longer serves %s: update DebianVersion and TestsuiteSHA256 with the interpreter)", url, resp.Status, DebianVersion)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("regrtest: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("regrtest: download %s: %w", url, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("regrtest: %w", err)
	}
	return os.Rename(tmp, path)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// modules lists the test modules of dir, as regrtest finds them: the
// test_*.py files and the test_* packages, sorted.
func modules(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("regrtest: %w", err)
	}
	var mods []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "test_") {
			continue
		}
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, name, "__init__.py")); err == nil {
				mods = append(mods, name)
			}
		} else if mod, ok := strings.CutSuffix(name, ".py"); ok {
			mods = append(mods, mod)
		}
	}
	sort.Strings(mods)
	return mods, nil
}
