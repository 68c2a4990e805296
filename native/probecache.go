package native

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/hermes-agent/hermes-wasm-exec/internal/trust"
)

// Probe answers are kept in memory for the life of the process (errors
// too), and on disk, in a file of the executor's cache dir: `run` is one process per script, and would otherwise start
// python (through a version manager's shim: twice) on every run just to
// learn its version. Only successes are kept; an entry's key holds the
// interpreter file's size and mtime (and for a shim, the version state it
// chose under), so a changed interpreter or selection is probed again.

// ProbeCacheName is the file's name in the executor's cache dir.
const ProbeCacheName = "python-probes.json"

// diskEntry is one cached probe.
type diskEntry struct {
	Python  string `json:"python"`
	Version string `json:"version"`
}

// maxDiskEntries bounds the file: past it, the file starts over.
const maxDiskEntries = 256

var diskMu sync.Mutex

// probeAnswer is what a probe found.
type probeAnswer struct {
	python, version string
	err             error
}

var (
	memMu    sync.Mutex
	memCache = map[string]probeAnswer{}
)

// cachedProbe returns the answer kept for key, in memory or in cacheFile
// (whose interpreter must still exist), or runs probe and keeps its answer:
// in memory unless ctx ended (a cancelled probe says nothing about the
// interpreter), and on disk when it succeeded.
func cachedProbe(ctx context.Context, key, cacheFile string, probe func() (python, version string, err error)) (string, string, error) {
	memMu.Lock()
	a, ok := memCache[key]
	memMu.Unlock()
	if ok {
		return a.python, a.version, a.err
	}
	if e, ok := diskGet(cacheFile, key); ok {
		if fi, err := os.Stat(e.Python); err == nil && !fi.IsDir() {
			// Kept in memory too: a serve or mcp process would otherwise
			// read and decode the whole file on every project-mode call.
			memMu.Lock()
			memCache[key] = probeAnswer{python: e.Python, version: e.Version}
			memMu.Unlock()
			return e.Python, e.Version, nil
		}
	}
	python, version, err := probe()
	if ctx.Err() == nil {
		memMu.Lock()
		memCache[key] = probeAnswer{python, version, err}
		memMu.Unlock()
		if err == nil {
			diskPut(cacheFile, key, diskEntry{Python: python, Version: version})
		}
	}
	return python, version, err
}

// readDisk returns file's entries; none when another user could have
// written it (internal/trust): an entry names the interpreter to run.
func readDisk(file string) map[string]diskEntry {
	m := map[string]diskEntry{}
	if _, err := os.Lstat(file); err != nil || trust.Untrusted(file) != "" {
		return m
	}
	if data, err := os.ReadFile(file); err == nil {
		json.Unmarshal(data, &m)
	}
	return m
}

// diskGet returns the cached probe for key in file ("" means none).
func diskGet(file, key string) (diskEntry, bool) {
	if file == "" {
		return diskEntry{}, false
	}
	diskMu.Lock()
	defer diskMu.Unlock()
	e, ok := readDisk(file)[key]
	return e, ok && e.Python != "" && e.Version != ""
}

// diskPut records a probe in file, atomically (a temp file renamed over
// it); failures only lose the cache.
func diskPut(file, key string, e diskEntry) {
	if file == "" {
		return
	}
	diskMu.Lock()
	defer diskMu.Unlock()
	m := readDisk(file)
	if len(m) >= maxDiskEntries {
		m = map[string]diskEntry{}
	}
	m[key] = e
	data, err := json.Marshal(m)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".probes-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		os.Remove(tmp.Name())
	}
}
