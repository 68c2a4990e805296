package strict

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// The generated modules: hermes_tools and the runner, which every run
// imports, and the loop of session kernels. Compiling their source costs
// the -O0 interpreter tens of milliseconds on every run, so the engine
// compiles them once (in the guest, since the host needs no Python) into
// unchecked hash-based .pyc files, keeps those in memory and in the
// compilation cache dir, and places each staging dir's modules' files in
// its __pycache__ beside the sources. Tracebacks still show source lines.
// Any failure here only costs speed: runs then compile the sources as
// usual.

// stagedNames are the generated modules, in a fixed order.
var stagedNames = []string{engine.StubName, engine.RunnerName, engine.KernelName}

// stagedSources returns the generated sources strict runs and kernels
// stage, generated once per process.
var stagedSources = sync.OnceValue(func() map[string][]byte {
	return map[string][]byte{
		engine.StubName:   []byte(engine.GenerateStub(engine.StubOptions{HostCall: true})),
		engine.RunnerName: []byte(engine.Runner),
		engine.KernelName: []byte(engine.KernelSource),
	}
})

// compileBytecodeScript compiles the staged sources into __pycache__.
var compileBytecodeScript = fmt.Sprintf(`import py_compile
for name in %s:
    py_compile.compile("/" + name, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
`, pyTuple(stagedNames))

// pyTuple renders names as a Python tuple of strings.
func pyTuple(names []string) string {
	var b strings.Builder
	b.WriteString("(")
	for _, n := range names {
		fmt.Fprintf(&b, "%q, ", n)
	}
	b.WriteString(")")
	return b.String()
}

// bytecodeKey names the bytecode of the staged sources for one
// interpreter build.
func bytecodeKey(wasmSum string) string {
	h := sha256.New()
	h.Write([]byte(wasmSum))
	sources := stagedSources()
	for _, name := range stagedNames {
		h.Write([]byte(name))
		h.Write(sources[name])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// bytecode returns the cached .pyc files (paths relative to the staging
// dir), building them on first use. It never fails: nil means "use the
// sources".
func (s *Engine) bytecode(ctx context.Context, c *compiled) map[string][]byte {
	c.pycOnce.Do(func() {
		dir := ""
		if cache := s.cacheDir(); cache != "" {
			dir = filepath.Join(cache, "pyc-"+c.pycKey)
			if files := readPycDir(dir, true); files != nil {
				c.pyc = files
				return
			}
		}
		files, err := s.buildBytecode(context.WithoutCancel(ctx), c)
		if err != nil {
			return
		}
		c.pyc = files
		if dir != "" {
			writePycDir(dir, files)
		}
	})
	return c.pyc
}

// buildBytecode runs the interpreter once to compile the staged sources.
func (s *Engine) buildBytecode(ctx context.Context, c *compiled) (map[string][]byte, error) {
	staging, err := os.MkdirTemp(s.opts.TempDir, "hermes-pyc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	for name, src := range stagedSources() {
		if err := os.WriteFile(filepath.Join(staging, name), src, 0o600); err != nil {
			return nil, err
		}
	}
	jail, err := newJailFS(staging)
	if err != nil {
		return nil, err
	}
	defer jail.close()
	var out bytes.Buffer
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(jail, "/").
		WithFSMount(c.stdlib, stdlibMount)
	mc := withEnv(wazero.NewModuleConfig(), guestEnv).
		WithName("").
		WithArgs("python", "-S", "-c", compileBytecodeScript).
		WithStdout(&out).
		WithStderr(&out).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	if err := s.start(ctx, c, mc); err != nil {
		return nil, fmt.Errorf("compiling bytecode: %w: %s", err, out.String())
	}
	files := readPycDir(filepath.Join(staging, "__pycache__"), false)
	if files == nil {
		return nil, fmt.Errorf("compiling bytecode: no .pyc written")
	}
	return files, nil
}

// manifestName lists the sha256 of each cached .pyc, so a damaged cache
// is rebuilt instead of breaking every run.
const manifestName = "SHA256SUMS"

// readPycDir reads the .pyc files of the staged modules from dir, keyed by
// their path under the staging dir, or returns nil. With verify, the files
// must match the manifest written beside them.
func readPycDir(dir string, verify bool) map[string][]byte {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".pyc") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil
		}
		files["__pycache__/"+e.Name()] = b
	}
	if len(files) != len(stagedNames) {
		return nil
	}
	if verify {
		want, err := os.ReadFile(filepath.Join(dir, manifestName))
		if err != nil || string(want) != manifest(files) {
			return nil
		}
	}
	return files
}

// manifest renders the sha256 of each file, in name order.
func manifest(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for rel := range files {
		names = append(names, rel)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, rel := range names {
		sum := sha256.Sum256(files[rel])
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), path.Base(rel))
	}
	return b.String()
}

// writePycDir saves files into dir atomically: a temp dir renamed into
// place, so a reader never sees half of it.
func writePycDir(dir string, files map[string][]byte) {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".pyc-tmp-")
	if err != nil {
		return
	}
	for rel, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, path.Base(rel)), b, 0o600); err != nil {
			os.RemoveAll(tmp)
			return
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, manifestName), []byte(manifest(files)), 0o600); err != nil {
		os.RemoveAll(tmp)
		return
	}
	os.RemoveAll(dir) // a damaged copy that failed verification
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp) // another process won the race; its copy is the same
	}
}
