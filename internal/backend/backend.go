// Package backend is where commands run and files live for the tools and
// for project-mode scripts: this host (local), a Docker container, an SSH
// host, or any target reached through a command prefix (exec). The tools
// (hostfuncs) read and write files through [FS] and run terminal commands
// through [Backend.Start]; project mode starts its interpreter with
// [Backend.Start] when the backend is remote. docs/backends/ describes each
// backend; docs/behaviour.md §12 the contract.
package backend

import (
	"context"
	"io"
	"io/fs"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
)

// Backend is one place where commands run. Implementations are safe for
// concurrent use.
type Backend interface {
	// Name is the backend's kind: config.BackendLocal, BackendDocker,
	// BackendSSH or BackendExec.
	Name() string
	// Target names what the backend reaches, for messages and kernel reuse
	// keys: "" for local, the container name, user@host:port, the prefix.
	Target() string
	// Remote reports whether commands run somewhere else than this host (paths
	// are then POSIX paths of the target).
	Remote() bool
	// Cwd is the default working dir of commands and the base of relative
	// paths in the target: the session working dir for local, terminal.cwd
	// (default /root for docker, the login dir for ssh) for remote ones.
	Cwd() string
	// Home is the user's home dir in the target ("~" of the tools'
	// paths): this host's for local, the target's login $HOME (learnt when
	// the backend connected) for remote ones; "" when unknown.
	Home() string
	// Start starts cmd and returns once it runs. When ctx ends before the
	// process exits, the whole process tree is stopped in the target (not
	// only the local client): SIGTERM, then SIGKILL after the grace given
	// to Process.Stop, or DefaultGrace.
	Start(ctx context.Context, cmd Command) (Process, error)
	// FS is the backend's file system, as the tools see it.
	FS() FS
	// Close releases what the backend holds (an SSH master connection, a
	// container that is not persistent). Processes still running are
	// stopped.
	Close() error
}

// DefaultGrace is the time between SIGTERM and SIGKILL when a process tree
// is stopped (docs/behaviour.md §5).
const DefaultGrace = proctree.DefaultGrace

// Command is one command to run in a backend.
type Command struct {
	// Argv is the program and its arguments; exactly one of Argv and Shell
	// is set.
	Argv []string
	// Shell is a command line for the target's POSIX shell (sh -c; cmd.exe
	// for a local Windows host).
	Shell string
	// Dir is the working dir in the target; empty means Backend.Cwd().
	Dir string
	// Env is the command's environment, already scrubbed. A local command
	// gets exactly Env; a remote one gets the target's login environment
	// (PATH, HOME, ...) with Env's other variables set over it, shipped
	// over the command's stdin, never on a command line.
	Env []string
	// Stdin is the command's input; nil means empty. For an interactive
	// process use Process.Stdin instead (set Interactive).
	Stdin io.Reader
	// Interactive gives the process a stdin pipe (Process.Stdin) that stays
	// open until the caller closes it.
	Interactive bool
	// Stdout and Stderr receive the command's output; they may be the same
	// writer. Nil discards it.
	Stdout, Stderr io.Writer
}

// Process is a started command.
type Process interface {
	// Stdin is the process's input when the command was Interactive; nil
	// otherwise. Closing it gives the process EOF.
	Stdin() io.WriteCloser
	// Wait waits for the process to exit and its output to be copied, and
	// returns its exit status (128+N when signal N ended it, as shells
	// report it). err is set when the status could not be learnt, such as a
	// lost connection.
	Wait() (exitCode int, err error)
	// Stop stops the whole process tree in the target: SIGTERM, SIGKILL
	// after grace (zero: DefaultGrace). It returns once the tree is gone or
	// given up on; Wait then returns.
	Stop(grace time.Duration)
}

// FS is the file system of a backend, with the semantics of package os (the
// errors satisfy errors.Is with fs.ErrNotExist, fs.ErrExist,
// fs.ErrPermission). Paths are absolute paths of the target. A remote FS
// answers each call with one round trip over a long-lived stream.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	// FileID returns the identity of the file name opens (a final symlink
	// followed, as Stat): its device, inode and link count.
	FileID(name string) (FileID, error)
	Readlink(name string) (string, error)
	// ReadDir lists a directory, sorted by name, as os.ReadDir.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Open opens a file for reading.
	Open(name string) (io.ReadCloser, error)
	ReadFile(name string) ([]byte, error)
	MkdirAll(name string, perm fs.FileMode) error
	// WriteTemp creates a new file in dir whose name is pattern with its
	// last "*" replaced by a random string (as os.CreateTemp), writes data
	// to it with mode perm, and returns its path.
	WriteTemp(dir, pattern string, data []byte, perm fs.FileMode) (string, error)
	Rename(oldname, newname string) error
	Remove(name string) error
}

// SetToolsBackend stores b as the backend of the hostfuncs.Options that opts points at
// (package hostfuncs sets this function when it is loaded): the executor gives the file
// tools and terminal a remote backend this way, through a field that embedders of the
// public hostfuncs package, who cannot name this internal package's types, never see.
var SetToolsBackend func(opts any, b Backend)
