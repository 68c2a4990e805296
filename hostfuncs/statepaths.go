package hostfuncs

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/hermes-agent/hermes-wasm-exec/config"
)

// hermesState are the entries of a Hermes home that hold the executor's
// state and the credentials and history it is trusted with: its caches
// (compiled code, the interpreter snapshot, the .pyc and web caches,
// stdout spills), the configuration, the credential and token stores and
// the transcripts. The rest of a home (skills, memories, logs, a checkout
// of Hermes itself) is the user's, and stays writable.
var hermesState = []string{
	"config.yaml", "cache", ".env", ".anthropic_oauth.json", "auth.json", "auth.lock", "auth",
	"mcp-tokens", "pairing", "webhook_subscriptions.json", "sessions",
	"state.db", "state.db-wal", "state.db-shm", "state.db-journal",
}

// StatePaths lists the executor's state on this host, absolute (existing
// or not): the processes a run starts must not write it
// (internal/landlock). For every Hermes home the file tools protect
// (hermesHome, else $HERMES_HOME, else ~/.hermes; the root above it when
// it is a profile; ~/.hermes) it lists the state entries above and its
// profiles: the whole profiles dir, or, for the root of the home in use
// when that is a profile, every other profile (the one in use is a home
// of the list itself). wasmCacheDir, the compilation cache dir (empty:
// $HERMES_WASM_CACHE_DIR, if set), is listed as well, as the executor and
// a shell would read a leading "~".
func StatePaths(hermesHome, wasmCacheDir string) []string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	homes := hermesDirs(hermesHome, home)
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, hd := range homes {
		for _, e := range hermesState {
			add(filepath.Join(hd, e))
		}
		profiles := filepath.Join(hd, "profiles")
		inUse := ""
		for _, other := range homes {
			if prof := profileOf(pathSyntax{}, other, hd); prof != "" && other == prof {
				inUse = other
			}
		}
		if inUse == "" {
			add(profiles)
			continue
		}
		entries, _ := os.ReadDir(profiles)
		for _, e := range entries {
			if p := filepath.Join(profiles, e.Name()); p != inUse {
				add(p)
			}
		}
	}
	if wasmCacheDir == "" {
		wasmCacheDir = os.Getenv(config.CacheDirEnv)
	}
	if wasmCacheDir != "" {
		for _, w := range []string{wasmCacheDir, expandHome(wasmCacheDir)} {
			if abs, err := filepath.Abs(w); err == nil {
				add(abs)
			}
		}
	}
	return out
}
