// Package cpustat reads the CPU time this process has used (and its
// resident memory, RSS), for the
// measurements that report CPU per operation (`hermes-wasm-exec bench` and
// Go benchmarks): on a machine shared with other work it varies much less
// than wall time. It imports nothing of the project.
package cpustat
