// Package hostfuncs holds the seven script-callable tools and their
// dispatcher: the only way a script reaches the host. Both modes call
// [Tools.Call]; strict mode from the wasm guest's tool channel, project mode
// from the socket RPC server.
package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/filecache"
	"github.com/hermes-agent/hermes-wasm-exec/internal/humanpath"
)

// result is a tool's answer: the JSON object the script receives as a dict.
// Tool failures are results with an "error" key, never Go errors.
type result = map[string]any

// messageError is a tool failure whose text is shown to the script as is:
// a whole sentence (capitalised, often with what to do next), never
// wrapped in another error's text.
type messageError struct{ msg string }

func (e *messageError) Error() string { return e.msg }

// messagef formats a [messageError].
func messagef(format string, args ...any) error {
	return &messageError{msg: fmt.Sprintf(format, args...)}
}

// Names lists the script-callable tools, the whole whitelist, in the order
// the generated hermes_tools module defines them (config.ToolNames).
var Names = config.ToolNames

// Options configures the tools of one execution.
type Options struct {
	// Workdir is the session's working directory on the host, absolute (the
	// executor resolves it with its one working-dir rule). Relative paths
	// given to the tools resolve against it.
	Workdir string
	// Env is the environment of commands run by terminal, already scrubbed
	// by the shared env layer. Nil means an empty environment.
	Env []string
	// Web configures web_search and web_extract.
	Web WebOptions
	// HermesHome is the Hermes home whose credential stores the file tools
	// refuse to read or write (see filesafety.go). Empty means
	// $HERMES_HOME, else ~/.hermes, looked up at each call.
	HermesHome string
	// WriteSafeRoot is the host's HERMES_WRITE_SAFE_ROOT: directories
	// separated by os.PathListSeparator outside which write_file and patch
	// refuse to write. Empty means writes are not confined.
	WriteSafeRoot string
	// WasmCacheDir is the executor's wasm compilation cache dir (which
	// also holds its .pyc cache), resolved as the strict runtime uses it.
	// write_file and patch never write in it, nor anywhere under a Hermes
	// home's cache/ (see filesafety.go). Empty means $HERMES_WASM_CACHE_DIR
	// when set; the default location is under cache/ anyway.
	WasmCacheDir string
	// WasmPackages are the package dirs of code_execution.wasm_packages,
	// whose modules every strict and sandboxed run imports: write_file and
	// patch never write in them (see filesafety.go).
	WasmPackages []string
	// SessionStore is the executor's session store dir
	// (code_execution.session_store), which holds suspended kernels'
	// images: write_file and patch never write in it. Empty: none.
	SessionStore string
	// ConfineToWorkdir makes read_file, write_file, patch and search_files
	// refuse any path that resolves (through symlinks) outside Workdir
	// (code_execution.confine_tools_to_workdir). Default false.
	ConfineToWorkdir bool

	// backend is where the file tools read and write and where terminal
	// runs its commands. Nil means this host: backend.Local(Workdir). For
	// a remote backend, paths are POSIX paths of the target and relative
	// ones resolve against its Cwd() instead of Workdir (see pathSyntax,
	// and filesafety.go for the file-safety rules there). Only the
	// module's own packages set it (backend.SetToolsBackend): an embedder
	// of this package runs the tools on this host.
	backend backend.Backend
}

func init() {
	backend.SetToolsBackend = func(opts any, b backend.Backend) { opts.(*Options).backend = b }
}

// Tools runs tool calls for one execution. It is safe for concurrent use.
type Tools struct {
	backend backend.Backend
	fs      backend.FS // backend.FS(): every file operation of the file tools
	px      pathSyntax // the backend's path syntax
	workdir string     // the host Workdir, or the remote backend's Cwd
	// workdirReal is workdir with symlinks resolved, for confinement;
	// resolved at the first tool call that needs it (most executions make
	// none, and resolving costs a system call per path component).
	workdirReal   func() string
	env           []string
	web           WebOptions
	hermesHome    string
	writeSafeRoot string
	wasmCacheDir  string
	wasmPackages  []string
	sessionStore  string      // read-protected too (buildPolicy)
	policyCache   policyCache // the file-safety policy (filesafety.go)
	links         linkIndex   // protected files by identity (hardlink.go)
	confine       bool
	// webCache is web_extract's cache of full texts (webcache.go), made
	// at its first use.
	webCache func() (*filecache.Cache, error)
}

// commandEnv is the environment of terminal's commands: env, and
// PYTHONDONTWRITEBYTECODE=1 unless env sets it, so that a python a command
// starts (a test run, a build) leaves no __pycache__ in the user's tree, as
// the script's own interpreter leaves none.
func commandEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PYTHONDONTWRITEBYTECODE=") {
			return env
		}
	}
	return append(slices.Clip(env), "PYTHONDONTWRITEBYTECODE=1")
}

// New returns the tools for opts.
func New(opts Options) (*Tools, error) {
	abs := opts.Workdir
	if !filepath.IsAbs(abs) {
		return nil, fmt.Errorf("hostfuncs: the working dir %s is not absolute", humanpath.Quote(abs))
	}
	abs = filepath.Clean(abs)
	b := opts.backend
	if b == nil {
		b = backend.Local(abs)
	}
	px := pathSyntax{posix: b.Remote()}
	if b.Remote() {
		abs = b.Cwd()
		if !px.isAbs(abs) {
			return nil, fmt.Errorf("hostfuncs: the working dir %s of the %s backend is not absolute", humanpath.Quote(abs), b.Name())
		}
		abs = px.clean(abs)
	}
	t := &Tools{
		backend:       b,
		fs:            b.FS(),
		px:            px,
		workdir:       abs,
		env:           commandEnv(opts.Env),
		web:           opts.Web,
		hermesHome:    opts.HermesHome,
		writeSafeRoot: opts.WriteSafeRoot,
		wasmCacheDir:  opts.WasmCacheDir,
		wasmPackages:  protectedDirs(opts),
		sessionStore:  opts.SessionStore,
		confine:       opts.ConfineToWorkdir,
	}
	t.workdirReal = sync.OnceValue(func() string { return t.realOrSelf(abs) })
	t.webCache = sync.OnceValues(func() (*filecache.Cache, error) { return newWebCache(opts.Web) })
	return t, nil
}

// Workdir returns the absolute session working directory: the host's, or
// the remote backend's Cwd.
func (t *Tools) Workdir() string { return t.workdir }

type handler func(t *Tools, ctx context.Context, args json.RawMessage) result

var handlers = map[string]handler{
	"web_search":   (*Tools).webSearch,
	"web_extract":  (*Tools).webExtract,
	"read_file":    (*Tools).readFile,
	"write_file":   (*Tools).writeFile,
	"search_files": (*Tools).searchFiles,
	"patch":        (*Tools).patch,
	"terminal":     (*Tools).terminal,
}

// Call runs the tool name with its JSON-encoded keyword arguments (an
// object; absent keys and nulls take the tool's defaults). An unknown tool
// or malformed arguments give an error result. ctx cancels long-running
// tools such as terminal.
func (t *Tools) Call(ctx context.Context, name string, args json.RawMessage) map[string]any {
	h, ok := handlers[name]
	if !ok {
		return result{"error": fmt.Sprintf("Unknown tool: %s. Available tools: %v", name, Names)}
	}
	return h(t, ctx, args)
}

// resolve makes p absolute against the working dir and cleans it. A
// leading "~" is the user's home, as for Hermes's tools (on a remote
// backend, the target's home: see remoteHome).
func (t *Tools) resolve(p string) string {
	p = t.expandHome(p)
	if t.px.isAbs(p) {
		return t.px.clean(p)
	}
	return t.px.join(t.workdir, p)
}

// decodeArgs decodes raw into dst (a pointer to a struct holding the
// defaults). It rejects unknown keys and wrong types, naming the tool, so a
// script's mistake comes back as a readable error result.
func decodeArgs(tool string, raw json.RawMessage, dst any) result {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return result{"error": fmt.Sprintf("Invalid arguments for %s: %v", tool, err)}
	}
	return nil
}

// protectedDirs are the dirs write_file and patch never write in besides
// the Hermes homes' state: the package dirs and the session store.
func protectedDirs(opts Options) []string {
	dirs := slices.Clone(opts.WasmPackages)
	if opts.SessionStore != "" {
		dirs = append(dirs, opts.SessionStore)
	}
	return dirs
}
