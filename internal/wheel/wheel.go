// Package wheel installs pure-Python wheels into a package dir for the WASI
// interpreter (code_execution.wasm_packages), offline: each wheel is checked
// against its own RECORD (sha256 of every file), refused when it holds
// compiled code, unpacked without a path leaving the dir, and recorded with
// its hash in the dir's manifest, so that what the sandbox imports is known
// and can be verified later.
package wheel

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// ManifestName is the manifest's file name in a package dir.
const ManifestName = "hermes-packages.json"

// Package is one installed wheel, as the manifest records it.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Wheel is the wheel file's name and SHA256 its hash (hex).
	Wheel  string `json:"wheel"`
	SHA256 string `json:"sha256"`
	// Files are the installed files (slash-separated, relative to the
	// dir) with their sha256 (hex).
	Files map[string]string `json:"files"`
}

// Manifest is a package dir's record of what was installed into it.
type Manifest struct {
	Packages []Package `json:"packages"`
}

// compiledSuffixes are the file suffixes of native code, which the WASI
// interpreter cannot load.
var compiledSuffixes = []string{".so", ".pyd", ".dylib", ".dll"}

// ReadManifest reads dir's manifest (empty when there is none).
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	return m, nil
}

// entry is one file of a wheel to install.
type entry struct {
	f    *zip.File
	dest string // slash-separated, relative to the dir
}

// Install checks the wheel at wheelPath and unpacks it into dir (made when
// missing), then records it in dir's manifest. Nothing is written when a
// check fails: a wheel with compiled code (Root-Is-Purelib: false, or a
// native library in it), a file whose hash differs from RECORD or that
// RECORD does not list, a path leading out of the dir, a file another
// installed package already has, or the same package installed already.
func Install(dir, wheelPath string) (Package, error) {
	raw, err := os.ReadFile(wheelPath)
	if err != nil {
		return Package{}, err
	}
	sum := sha256.Sum256(raw)
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return Package{}, fmt.Errorf("%s is not a wheel (a zip archive): %w", filepath.Base(wheelPath), err)
	}
	name := filepath.Base(wheelPath)
	distInfo, err := findDistInfo(zr)
	if err != nil {
		return Package{}, fmt.Errorf("%s: %w", name, err)
	}
	meta, err := readFields(zr, distInfo+"/WHEEL")
	if err != nil {
		return Package{}, fmt.Errorf("%s: %w", name, err)
	}
	if !strings.EqualFold(meta["Root-Is-Purelib"], "true") {
		return Package{}, fmt.Errorf("%s is not a pure-Python wheel (Root-Is-Purelib: %s): it holds compiled code, which the WASI interpreter cannot load; run code that needs it in project mode without the sandbox", name, cmp.Or(meta["Root-Is-Purelib"], "missing"))
	}
	pkgMeta, err := readFields(zr, distInfo+"/METADATA")
	if err != nil {
		return Package{}, fmt.Errorf("%s: %w", name, err)
	}
	record, err := readRecord(zr, distInfo+"/RECORD")
	if err != nil {
		return Package{}, fmt.Errorf("%s: %w", name, err)
	}
	dataDir := strings.TrimSuffix(distInfo, ".dist-info") + ".data"
	var entries []entry
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if err := safeName(f.Name); err != nil {
			return Package{}, fmt.Errorf("%s: %w", name, err)
		}
		for _, s := range compiledSuffixes {
			if strings.HasSuffix(strings.ToLower(f.Name), s) || strings.Contains(strings.ToLower(path.Base(f.Name)), s+".") {
				return Package{}, fmt.Errorf("%s holds compiled code (%s), which the WASI interpreter cannot load; run code that needs it in project mode without the sandbox", name, f.Name)
			}
		}
		want, listed := record[f.Name]
		if !listed {
			return Package{}, fmt.Errorf("%s: %s is not in its RECORD", name, f.Name)
		}
		if f.Name != distInfo+"/RECORD" {
			got, err := fileHash(f)
			if err != nil {
				return Package{}, fmt.Errorf("%s: %s: %w", name, f.Name, err)
			}
			if got != want {
				return Package{}, fmt.Errorf("%s: %s does not match the hash its RECORD gives (sha256=%s); the wheel is damaged or was altered", name, f.Name, want)
			}
		}
		dest := f.Name
		if rest, ok := strings.CutPrefix(f.Name, dataDir+"/"); ok {
			kind, inner, _ := strings.Cut(rest, "/")
			if kind != "purelib" && kind != "platlib" {
				continue // scripts, headers and data have no place in a package dir
			}
			dest = inner
		}
		entries = append(entries, entry{f: f, dest: dest})
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return Package{}, err
	}
	pkg := Package{Name: pkgMeta["Name"], Version: pkgMeta["Version"], Wheel: name, SHA256: hex.EncodeToString(sum[:]), Files: map[string]string{}}
	for _, p := range m.Packages {
		if strings.EqualFold(normalize(p.Name), normalize(pkg.Name)) {
			return Package{}, fmt.Errorf("%s %s is installed in %s already (from %s): use another dir for another version", p.Name, p.Version, dir, p.Wheel)
		}
	}
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.dest))); err == nil {
			return Package{}, fmt.Errorf("%s: %s exists in %s already (another package's?); nothing was installed", name, e.dest, dir)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Package{}, err
	}
	// Unpacked beside the dir, then moved in: a failure leaves no part of
	// the wheel in it.
	tmp, err := os.MkdirTemp(dir, ".install-")
	if err != nil {
		return Package{}, err
	}
	defer os.RemoveAll(tmp)
	for _, e := range entries {
		h, err := extract(e.f, filepath.Join(tmp, filepath.FromSlash(e.dest)))
		if err != nil {
			return Package{}, fmt.Errorf("%s: %s: %w", name, e.f.Name, err)
		}
		pkg.Files[e.dest] = h
	}
	tops := map[string]bool{}
	for _, e := range entries {
		top, _, _ := strings.Cut(e.dest, "/")
		tops[top] = true
	}
	var moved []string
	for _, top := range sortedKeys(tops) {
		if err := os.Rename(filepath.Join(tmp, top), filepath.Join(dir, top)); err != nil {
			for _, m := range moved {
				os.RemoveAll(filepath.Join(dir, m))
			}
			return Package{}, err
		}
		moved = append(moved, top)
	}
	m.Packages = append(m.Packages, pkg)
	if err := writeManifest(dir, m); err != nil {
		for _, mv := range moved {
			os.RemoveAll(filepath.Join(dir, mv))
		}
		return Package{}, err
	}
	return pkg, nil
}

// Verify checks every file the manifest of dir records against its hash,
// and returns the problems found (none: the dir holds what was installed).
func Verify(dir string) ([]string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, p := range m.Packages {
		for _, f := range sortedKeys(p.Files) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", p.Name, f, err))
				continue
			}
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) != p.Files[f] {
				problems = append(problems, fmt.Sprintf("%s: %s was changed since it was installed", p.Name, f))
			}
		}
	}
	return problems, nil
}

// findDistInfo returns the wheel's one top-level *.dist-info dir.
func findDistInfo(zr *zip.Reader) (string, error) {
	var found []string
	for _, f := range zr.File {
		top, rest, _ := strings.Cut(f.Name, "/")
		if strings.HasSuffix(top, ".dist-info") && rest == "WHEEL" && !slices.Contains(found, top) {
			found = append(found, top)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("not a wheel: it must have exactly one *.dist-info/WHEEL, found %d", len(found))
	}
	return found[0], nil
}

// readFields reads an email-header style file of the wheel (WHEEL,
// METADATA): the first value of each field.
func readFields(zr *zip.Reader, name string) (map[string]string, error) {
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s is missing", name)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // the body of METADATA
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			if _, seen := out[k]; !seen {
				out[k] = strings.TrimSpace(v)
			}
		}
	}
	return out, sc.Err()
}

// readRecord reads RECORD: file name to "sha256=<urlsafe base64>" hash,
// converted to hex ("" for RECORD itself).
func readRecord(zr *zip.Reader, name string) (map[string]string, error) {
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s is missing: a wheel without one cannot be checked", name)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := map[string]string{}
	for _, r := range rows {
		if len(r) < 2 {
			continue
		}
		if r[0] == name {
			out[r[0]] = ""
			continue
		}
		algo, digest, ok := strings.Cut(r[1], "=")
		if !ok || algo != "sha256" {
			return nil, fmt.Errorf("%s: %s has no sha256 hash (%q)", name, r[0], r[1])
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(digest, "="))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: bad hash %q", name, r[0], digest)
		}
		out[r[0]] = hex.EncodeToString(b)
	}
	return out, nil
}

// safeName refuses a member name that is absolute, goes up, or uses
// backslashes or drive letters.
func safeName(name string) error {
	if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.Contains(name, ":") || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("refusing the member %q: its path is not a plain relative one", name)
	}
	return nil
}

// fileHash is the hex sha256 of f's content.
func fileHash(f *zip.File) (string, error) {
	r, err := f.Open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// extract writes f to dest (read-only files, 0644) and returns its hex
// sha256.
func extract(f *zip.File, dest string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", err
	}
	r, err := f.Open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), r); err != nil {
		out.Close()
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), out.Close()
}

// writeManifest writes m to dir atomically (a temp file renamed over it).
func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".manifest-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestName)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// normalize is a distribution name as PEP 503 compares them.
func normalize(n string) string {
	n = strings.ToLower(n)
	return strings.NewReplacer("_", "-", ".", "-").Replace(n)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
