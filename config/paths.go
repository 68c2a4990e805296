package config

import (
	"os"
	"path/filepath"
)

// CacheDirEnv overrides where the wasm compilation cache lives (default
// $HERMES_HOME/cache/wasm, see [CacheDir]). Tests point every package at
// one directory so the interpreter is compiled once per machine, not once
// per package.
const CacheDirEnv = "HERMES_WASM_CACHE_DIR"

// CacheDir is where the compilation cache (compiled interpreters and the
// standard library's bytecode) lives for the state dir home:
// $HERMES_WASM_CACHE_DIR when set, else home/cache/wasm.
func CacheDir(home string) string {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return d
	}
	return filepath.Join(home, "cache", "wasm")
}
