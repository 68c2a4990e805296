package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/gittree"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// TestReleaseReproducible runs `make release`'s script for one target twice:
// from this checkout with the usual build cache, and from a copy of its
// tracked files at another path with an empty build cache. The binaries and
// SHA256SUMS must be byte for byte the same. On linux/amd64 the binary then
// runs: `version` names the release, and a strict script runs on the
// embedded interpreter.
func TestReleaseReproducible(t *testing.T) {
	testenv.SkipUnderWine(t, "wine has no git, bash or go to build the release with .ci/release; the release is built twice and compared on Linux")
	testenv.RealEngines(t, "a release build from an empty Go build cache (minutes of CPU)")
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	copyRoot := filepath.Join(t.TempDir(), "elsewhere", "hermes-wasm-exec")
	_, err = gittree.CopyTracked(root, copyRoot)
	require.NoError(t, err)

	const target, version, commit = "linux/amd64", "v0.0.0-reprotest", "0123456789abcdef"
	name := "hermes-wasm-exec-" + version + "-linux-amd64"
	out1, out2 := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")
	buildRelease(t, root, out1, target, version, commit)
	buildRelease(t, copyRoot, out2, target, version, commit, "GOCACHE="+t.TempDir())

	for _, f := range []string{name, "SHA256SUMS"} {
		a, err := os.ReadFile(filepath.Join(out1, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(out2, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "%s differs between the two builds (%d vs %d bytes)", f, len(a), len(b))
	}
	sums, err := os.ReadFile(filepath.Join(out1, "SHA256SUMS"))
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{64}  `+name+"\n$", string(sums))
	bin, err := os.ReadFile(filepath.Join(out1, name))
	require.NoError(t, err)
	require.False(t, bytes.Contains(bin, []byte(root)), "the build path is not in the binary")
	// docs/building.md says how big a release binary is.
	doc, err := os.ReadFile(filepath.Join(root, "docs", "building.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`\(about (\d+)–(\d+) MiB each`).FindSubmatch(doc)
	require.NotNil(t, m, "docs/building.md states the binaries' size as (about N–M MiB each")
	lo, _ := strconv.Atoi(string(m[1]))
	hi, _ := strconv.Atoi(string(m[2]))
	require.True(t, len(bin) >= lo<<20 && len(bin) <= (hi+1)<<20, "the linux/amd64 release binary is %.1f MiB; docs/building.md says %d–%d MiB", float64(len(bin))/(1<<20), lo, hi)

	if runtime.GOOS+"/"+runtime.GOARCH != target {
		return
	}
	exe := filepath.Join(out1, name)
	ver, err := exec.Command(exe, "version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(ver), "hermes-wasm-exec "+version+"\ncommit         "+commit+"\n"), string(ver))

	run := exec.Command(exe, "run", "--mode", "strict", "-")
	run.Env = append(os.Environ(), "HERMES_HOME="+t.TempDir(), "HERMES_WASM_INTERPRETER=")
	run.Stdin = strings.NewReader("import sys, zoneinfo\nprint(sys.version_info[:2], zoneinfo.ZoneInfo('Asia/Tokyo'))\n")
	res, err := run.Output()
	require.NoError(t, err, "%s", res)
	require.Contains(t, string(res), `(3, 13) Asia/Tokyo\n`)
}

// TestReleaseArm64: the linux/arm64 release binary, built by .ci/release,
// runs under user-mode emulation (qemu-aarch64-static, which `make test`
// installs): `version` names it, and a strict script runs on the embedded
// interpreter compiled for arm64 by wazero.
func TestReleaseArm64(t *testing.T) {
	testenv.SkipUnderWine(t, "wine has no qemu-aarch64-static (Linux user-mode emulation) or go to build the arm64 release; it runs on Linux")
	testenv.RealEngines(t, "qemu-aarch64-static (qemu-user-static, installed by .ci/deps as root)")
	t.Parallel()
	qemu, err := exec.LookPath("qemu-aarch64-static")
	require.NoError(t, err, "qemu-aarch64-static runs the arm64 binary: install qemu-user-static (make test does, as root)")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "release")
	buildRelease(t, root, out, "linux/arm64", "v0.0.0-arm64test", "0123abcd")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exe := filepath.Join(out, "hermes-wasm-exec-v0.0.0-arm64test-linux-arm64")

	ver, err := exec.CommandContext(ctx, qemu, exe, "version").Output()
	require.NoError(t, err)
	require.Contains(t, string(ver), "hermes-wasm-exec v0.0.0-arm64test\n")
	require.Contains(t, string(ver), "linux/arm64")

	run := exec.CommandContext(ctx, qemu, exe, "run", "--mode", "strict", "-")
	run.Env = append(os.Environ(), "HERMES_HOME="+t.TempDir(), "HERMES_WASM_CACHE_DIR=", "HERMES_WASM_INTERPRETER=")
	run.Stdin = strings.NewReader("import json, zoneinfo\nprint(json.dumps({'tz': str(zoneinfo.ZoneInfo('Asia/Tokyo'))}))\n")
	res, err := run.Output()
	require.NoError(t, err, "%s", res)
	require.Contains(t, string(res), `"status": "success"`)
	require.Contains(t, string(res), `{\"tz\": \"Asia/Tokyo\"}`)
}

// buildRelease runs .ci/release in dir for one target into out, with the
// version and commit given and the extra environment, and checks it built
// without cgo and with -trimpath.
func buildRelease(t *testing.T, dir, out, target, version, commit string, extraEnv ...string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "bash runs .ci/release: install it (apt-get install bash)")
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command is not on PATH: install Go (https://go.dev/dl)")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, filepath.Join(dir, ".ci", "release"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO="+goBin, "RELEASE_TARGETS="+target, "RELEASE_OUT="+out, "VERSION="+version, "COMMIT="+commit, "GOFLAGS=")
	cmd.Env = append(cmd.Env, extraEnv...)
	var outb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &outb
	require.NoError(t, cmd.Run(), "%s", outb.String())
	require.Contains(t, outb.String(), "CGO_ENABLED=0")
	require.Contains(t, outb.String(), "-trimpath")
}
