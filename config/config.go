// Package config reads, validates and defaults the executor's configuration from
// $HERMES_HOME/config.yaml, which is Hermes Agent's own configuration file.
//
// That file is Hermes's whole configuration: besides what this executor uses (the
// code_execution, terminal, web and approvals sections and the top-level timezone) it holds
// model, toolsets, agent, display, memory, mcp_servers and much more, and Hermes adds keys as
// it grows. A user's existing ~/.hermes/config.yaml must load unchanged, so:
//
//   - A key this executor uses is validated strictly: a wrong type or an invalid value is an
//     [*Error] naming the file, the line and the full key path (for example
//     "code_execution.timeout"); the command-line front ends exit with status 2 on it.
//   - Every other key is accepted and ignored. [Config.Ignored] lists them (the front ends log
//     the list once at debug level, and `hermes-wasm-exec doctor --config` prints it), and
//     [Config.Used] lists the keys that were read, with their effective values.
//   - An unknown key that looks like a misspelling of a key used here (an edit distance of at
//     most 2, or 1 for names of four letters or fewer; Hermes's own keys are never taken for
//     typos) is a warning with a "did you mean", in [Config.Warnings], never an error.
//   - Values keep Hermes's meaning: approvals.mode is manual | smart | off (smart asks a model
//     in Hermes; there is no model here, so it behaves as manual), approvals.cron_mode is
//     deny | approve, kernel_idle_timeout and max_session_kernels below 1 clamp to 1, and a
//     null or empty mode means the default. An unknown code_execution.mode falls back, with a
//     warning, to strict (the sandbox) rather than to Hermes's project, so that a typo never
//     drops the sandbox ([ModeFallback]); an unknown approvals.mode falls back to manual and
//     cron_mode to deny, as in Hermes.
//
// The time zone exported to scripts and terminal commands as TZ is, in order of precedence:
// the HERMES_TIMEZONE environment variable (applied by [Load], as Hermes does), then
// code_execution.timezone, then the top-level timezone key. [Config.Timezone] holds the result.
// [Load] likewise applies Hermes's TERMINAL_* variables over the terminal section's backend
// keys (see [Terminal]).
//
// The file is decoded into a YAML node tree and walked by hand, so every problem carries its
// line. All problems are returned as [*Error], so a caller can tell a configuration problem
// apart from other failures with errors.As.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	// Time zones are validated with time.LoadLocation, which needs the IANA database: embedded
	// here, so that a valid name is accepted on a host without one (Windows, slim containers).
	_ "time/tzdata"

	"gopkg.in/yaml.v3"

	"github.com/hermes-agent/hermes-wasm-exec/internal/textdist"
	"github.com/hermes-agent/hermes-wasm-exec/internal/trust"
)

// Mode values accepted for code_execution.mode.
const (
	// ModeProject runs scripts with a native Python in the session's working directory.
	ModeProject = "project"
	// ModeStrict runs scripts in the embedded WASI CPython inside a wazero sandbox.
	ModeStrict = "strict"
	// ModeFallback is the mode an unknown mode value runs in, wherever it is given (the
	// file's code_execution.mode, an embedder's Request.Mode): strict, the sandbox, so that a
	// typo never runs a script without it. Hermes falls back to project; the command-line
	// flags and serve's per-call mode refuse an unknown value instead.
	ModeFallback = ModeStrict
)

// Modes lists the code_execution.mode values.
var Modes = []string{ModeProject, ModeStrict}

// ToolNames are the seven tools a script can call through hermes_tools, in the order
// Hermes lists them. The tools are hostfuncs'; the list is here so that the layers
// that only name them (the engines, the executor's schema) need not import the tools'
// dependencies.
var ToolNames = []string{"web_search", "web_extract", "read_file", "write_file", "search_files", "patch", "terminal"}

// Sandbox values accepted for code_execution.sandbox: where project mode runs scripts.
const (
	// SandboxNone runs project-mode scripts with the host's python (the default).
	SandboxNone = "none"
	// SandboxWasm runs project-mode scripts in the embedded WASI CPython with the working
	// dir mounted at its host path, the file tools' rules enforced on the script's own
	// file access, and the pure-Python packages of the project's python importable
	// read-only: the sandboxed project mode.
	SandboxWasm = "wasm"
)

// Sandboxes lists the code_execution.sandbox values.
var Sandboxes = []string{SandboxNone, SandboxWasm}

// Statuses of an execution's result (the result's "status" field).
const (
	// StatusSuccess: the script ran to the end and exited 0.
	StatusSuccess = "success"
	// StatusError: the script failed (an exception, a non-zero exit, a crash) or could not start.
	StatusError = "error"
	// StatusTimeout: the script was stopped at its timeout.
	StatusTimeout = "timeout"
	// StatusInterrupted: the script was stopped by an interrupt (a cancelled context).
	StatusInterrupted = "interrupted"
)

// Limits on the numeric settings. They are exported so that documentation, the command-line
// front end and tests quote the same numbers the validator enforces.
const (
	// MinTimeout is the smallest accepted code_execution.timeout, in seconds.
	MinTimeout = 1
	// MaxTimeout is the largest accepted code_execution.timeout, in seconds (one day).
	MaxTimeout = 86400
	// MinMemoryLimitMB is the smallest accepted code_execution.memory_limit_mb.
	MinMemoryLimitMB = 16
	// MaxMemoryLimitMB is the largest accepted code_execution.memory_limit_mb: the whole
	// 4 GiB address space of a wasm32 guest.
	MaxMemoryLimitMB = 4096
	// MinSessionLease and MaxSessionLease bound code_execution.session_lease, in seconds.
	MinSessionLease = 2
	MaxSessionLease = 3600
	// MinDiskLimitMB is the smallest accepted code_execution.disk_limit_mb.
	MinDiskLimitMB = 1
	// MaxDiskLimitMB is the largest accepted code_execution.disk_limit_mb (64 GiB).
	MaxDiskLimitMB = 65536
	// MinProjectMemoryLimitMB is the smallest accepted
	// code_execution.project_memory_limit_mb.
	MinProjectMemoryLimitMB = 16
	// MaxProjectMemoryLimitMB is the largest accepted
	// code_execution.project_memory_limit_mb (16 TiB: in effect, no cap).
	MaxProjectMemoryLimitMB = 16 << 20
	// MinProcessLimit is the smallest accepted code_execution.process_limit: the
	// interpreter, its threads and a few commands.
	MinProcessLimit = 16
	// MaxProcessLimit is the largest accepted code_execution.process_limit (the kernel's
	// own pid_max ceiling).
	MaxProcessLimit = 4194304
	// MaxApprovalTimeout is the largest accepted approvals.timeout, in seconds: one year,
	// Hermes's own cap.
	MaxApprovalTimeout = 365 * 24 * 3600
)

// Web search providers accepted for web.search.provider.
const (
	ProviderSearXNG = "searxng"
	ProviderBrave   = "brave"
	ProviderTavily  = "tavily"
)

// Providers lists the web.search.provider values.
var Providers = []string{ProviderSearXNG, ProviderBrave, ProviderTavily}

// DefaultAPIKeyEnv is the host variable that holds a keyed provider's key when
// web.search.api_key_env does not name one.
var DefaultAPIKeyEnv = map[string]string{ProviderBrave: "BRAVE_API_KEY", ProviderTavily: "TAVILY_API_KEY"}

// Bounds of web.extract.char_limit.
const (
	MinExtractCharLimit = 100
	// DefaultExtractCharLimit is web.extract.char_limit when the file does not set it.
	DefaultExtractCharLimit = 15000
	MaxExtractCharLimit     = 1_000_000
)

// Defaults and bounds of web_extract's cache of full texts ($HERMES_HOME/cache/web), the
// web.extract.cache_* keys.
const (
	// DefaultExtractCacheMaxMB is web.extract.cache_max_mb, in MiB: what the cache may hold.
	DefaultExtractCacheMaxMB = 256
	// MaxExtractCacheMaxMB is the largest accepted web.extract.cache_max_mb (64 GiB); 0
	// disables the cache.
	MaxExtractCacheMaxMB = 65536
	// DefaultExtractCacheEntryMaxMB is web.extract.cache_entry_max_mb, in MiB: the largest
	// full text kept.
	DefaultExtractCacheEntryMaxMB = 8
	// MaxExtractCacheEntryMaxMB is the largest accepted web.extract.cache_entry_max_mb.
	MaxExtractCacheEntryMaxMB = 1024
	// DefaultExtractCacheTTLMinutes is web.extract.cache_ttl_minutes: a full text is kept
	// one day after it was fetched.
	DefaultExtractCacheTTLMinutes = 24 * 60
	// MaxExtractCacheTTLMinutes is the largest accepted web.extract.cache_ttl_minutes (a
	// year).
	MaxExtractCacheTTLMinutes = 365 * 24 * 60
)

// FileName is the name of the configuration file inside [HermesHome].
const FileName = "config.yaml"

// TimezoneEnv is the environment variable that, when set and not blank, overrides every
// timezone key of the file (Hermes's precedence). [Load] applies it.
const TimezoneEnv = "HERMES_TIMEZONE"

// Terminal backends accepted for terminal.backend: where terminal() commands, the file tools
// and project-mode scripts run (docs/backends/).
const (
	// BackendLocal runs commands on this host. The default.
	BackendLocal = "local"
	// BackendDocker runs commands in a Docker container started from terminal.docker_image.
	BackendDocker = "docker"
	// BackendSSH runs commands on terminal.ssh_host as terminal.ssh_user, through ssh.
	BackendSSH = "ssh"
	// BackendExec runs commands through a command prefix, terminal.exec_command (such as
	// ["kubectl", "exec", "-i", "POD", "--"]). Not a Hermes backend.
	BackendExec = "exec"
)

// Backends lists the terminal.backend values, in the order error messages show them.
var Backends = []string{BackendLocal, BackendDocker, BackendSSH, BackendExec}

// Defaults of the terminal section's backend keys: Hermes's own, except where noted.
const (
	// DefaultDockerImage is terminal.docker_image.
	DefaultDockerImage = "nikolaik/python-nodejs:python3.11-nodejs20"
	// DefaultContainerCPU is terminal.container_cpu, in CPUs.
	DefaultContainerCPU = 1.0
	// DefaultContainerMemoryMB is terminal.container_memory, in MB.
	DefaultContainerMemoryMB = 5120
	// DefaultSSHPort is terminal.ssh_port.
	DefaultSSHPort = 22
	// DefaultDockerCwd is the docker backend's working dir when terminal.cwd is not set.
	DefaultDockerCwd = "/root"
	// DefaultSSHCwd is the ssh backend's working dir when terminal.cwd is not set: the login
	// dir.
	DefaultSSHCwd = "~"
)

// ClientEnvNames are the variables of the executor's environment that the local client of a
// remote backend (the docker CLI, ssh, the exec prefix, and every helper they start) gets,
// by exact name, besides [ClientEnvPrefixes] and terminal.client_env ([Terminal.ClientEnv]):
// what the client itself needs to find its programs, its configuration and its engine or
// agent, and nothing else. A host-managed credential ([IsManagedCredential]) never passes,
// whatever a list says. docs/backends/README.md says why each is there.
var ClientEnvNames = []string{
	// Every client: its programs, its configuration, its user, temp files.
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TMPDIR",
	// Rootless Docker and podman: their sockets, configuration and storage.
	"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
	// The docker CLI: which engine, and how to reach it.
	"DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
	"DOCKER_TLS", "DOCKER_API_VERSION",
	// podman's CLI: its service and configuration files.
	"CONTAINER_HOST", "CONTAINER_CONNECTION", "CONTAINERS_CONF", "CONTAINERS_REGISTRIES_CONF",
	"CONTAINERS_STORAGE_CONF",
	// kubectl (an exec prefix).
	"KUBECONFIG",
	// ssh, and the docker CLI with an ssh:// DOCKER_HOST: the agent holding the keys.
	"SSH_AUTH_SOCK",
}

// ClientEnvPrefixes are the name prefixes that a remote backend's client gets besides
// [ClientEnvNames]: the locale categories. A name among them that looks secret (one that
// holds KEY, TOKEN, SECRET, ...) does not pass.
var ClientEnvPrefixes = []string{"LC_"}

// terminalEnv lists the environment variables that, when set and not blank, override a key of
// the terminal section, as in Hermes. [Load] applies them, in this order.
var terminalEnv = []struct{ name, key string }{
	{"TERMINAL_ENV", "backend"},
	{"TERMINAL_CWD", "cwd"},
	{"TERMINAL_DOCKER_IMAGE", "docker_image"},
	{"TERMINAL_SSH_HOST", "ssh_host"},
	{"TERMINAL_SSH_USER", "ssh_user"},
	{"TERMINAL_SSH_PORT", "ssh_port"},
	{"TERMINAL_SSH_KEY", "ssh_key"},
}

// Config is the executor's whole configuration.
//
// The zero value is not meaningful; start from [Default], [Load] or [Parse], which fill every
// default.
type Config struct {
	// CodeExecution is the code_execution section. Every field has a default; see
	// [CodeExecution].
	CodeExecution CodeExecution
	// Terminal is the terminal section: env_passthrough, and the backend and its settings.
	Terminal Terminal
	// Web is the web section: web_search's provider and web_extract's settings.
	Web Web
	// Approvals is the approvals section: how scripts and dangerous commands are approved.
	Approvals Approvals
	// Timezone is the IANA time zone exported as TZ to scripts and terminal commands, in both
	// modes, or "" for none (the host's own zone then applies). It is the effective value:
	// $HERMES_TIMEZONE when [Load] found it set, else code_execution.timezone, else the
	// top-level timezone key. A Config built in code may set it directly; the executor falls
	// back to CodeExecution.Timezone when it is empty.
	Timezone string
	// TimezoneSource says where Timezone came from: TimezoneEnv, "code_execution.timezone",
	// "timezone", or "" when no zone is configured.
	TimezoneSource string
	// Source is the file the configuration was read from, or "" when it holds only the
	// defaults because no file was found.
	Source string
	// Warnings lists non-fatal problems found while parsing, each a full sentence starting
	// with the file and line: a likely misspelt key, an unknown mode that fell back to the
	// default, a Hermes setting this executor cannot honour. It is nil when there were none.
	// The front ends print them on stderr.
	Warnings []string
	// Used lists, in document order, the keys read from the file, with their effective values
	// (after defaults, aliases and clamping). Nil when no file was read.
	Used []Key
	// Ignored lists, in document order, the keys of the file this executor does not use:
	// Hermes's own sections and settings, and unknown keys. A section is listed once, not key
	// by key. Nil when there were none.
	Ignored []Key
	// Notes lists adjustments worth a debug line, such as a value clamped to its minimum.
	Notes []string
}

// Key is one key of the configuration file, as reported in [Config.Used] and
// [Config.Ignored].
type Key struct {
	// Path is the full dotted key path, such as "code_execution.timeout".
	Path string
	// Line is the 1-based line of the key in the file.
	Line int
	// Value is, for a used key, its effective value as text; "" for an ignored key.
	Value string
	// Note says, when there is something to say, why a key is ignored or how its value was
	// changed (an alias, a clamp, an override).
	Note string
}

// String formats the key as "path (line n)".
func (k Key) String() string { return fmt.Sprintf("%s (line %d)", k.Path, k.Line) }

// CodeExecution is the code_execution section of the configuration file.
type CodeExecution struct {
	// Mode selects where scripts run: "project" (the default) or "strict". It is stored
	// trimmed and lower-case. Null or empty means the default; any other value falls back to
	// "strict", the sandbox, with a warning ([ModeFallback]). YAML key: mode.
	Mode string
	// Sandbox is "none" (the default) or "wasm": with wasm, project mode runs scripts in
	// the embedded WASI interpreter over the working dir ([SandboxWasm]). Strict mode is
	// always sandboxed. Unknown values give "wasm" with a warning. YAML key: sandbox.
	Sandbox string
	// WasmPackages are dirs of pure-Python packages (trees as site-packages holds them,
	// or unpacked wheels: `hermes-wasm-exec packages install`) that the WASI interpreter
	// imports, read-only, in strict mode and the sandboxed project mode. Each must be an
	// absolute path ("~/" is expanded). Default none. YAML key: wasm_packages.
	WasmPackages []string
	// SessionStore is where session kernels are suspended instead of closed when the
	// kernel limit evicts them, the idle timeout ends them or the executor shuts down, and
	// resumed from on their session's next call (strict-mode kernels; docs/service.md):
	// an absolute path of a dir ("~/" is expanded) on a local or shared file system, or
	// "s3://bucket/prefix", an S3-compatible object store (endpoint, region and
	// credentials from the usual AWS environment and files); "" (the default) is off.
	// YAML key: session_store.
	SessionStore string
	// SessionStoreMaxMB caps the images of one session's kernels together, in MiB: a
	// kernel whose image would pass it is closed, not suspended. Default 256. YAML key:
	// session_store_max_mb.
	SessionStoreMaxMB int
	// SessionStoreCompression is how images are compressed: [CompressionFast] (the
	// default: s2, the shortest suspensions and resumes) or [CompressionSmall] (zstd:
	// about 40% smaller images, for about 3x the time). YAML key:
	// session_store_compression.
	SessionStoreCompression string
	// SessionTTL is how long, in seconds, an image stays in the store unwritten before it
	// is removed; 0 keeps images until their session closes. Default 604800 (7 days).
	// YAML key: session_ttl.
	SessionTTL int
	// SessionCheckpoint is when a session's kernel is written to the store besides
	// eviction and shutdown: [CheckpointOff] (the default) or [CheckpointEveryCall]
	// (after each call, so a crash loses at most the call in flight). YAML key:
	// session_checkpoint.
	SessionCheckpoint string
	// SessionLease is how long, in seconds, a session's lease lasts unless renewed: the
	// one executor running a session's kernel renews it while it runs, and another takes
	// the session over once the lease has lapsed (or at once, when the holder is a
	// process of this host that has exited). Default 30. YAML key: session_lease.
	SessionLease int
	// Timeout is the wall-clock limit of one execution, in seconds. Default 300; it must be
	// between 1 and 86400. YAML key: timeout.
	Timeout int
	// MaxToolCalls is how many tool calls one execution may make. Default 50; it must be
	// 0 or more, and 0 allows no tool calls at all. YAML key: max_tool_calls.
	MaxToolCalls int
	// KernelIdleTimeout is how long, in seconds, an idle session kernel is kept before it
	// is reaped. Default 1800; a value below 1 is clamped to 1, as in Hermes.
	// YAML key: kernel_idle_timeout.
	KernelIdleTimeout int
	// MaxSessionKernels is how many top-level kernels may be alive at once: a new one evicts
	// the least recently used idle one, or, when all run a call, waits for one (up to the
	// call's timeout, then runs standalone). Default 4; a value below 1 is clamped to 1, as in
	// Hermes. YAML key: max_session_kernels.
	MaxSessionKernels int
	// MemoryLimitMB caps the guest's linear memory in strict mode, in MiB. Default 512; it
	// must be between 16 and 4096 (the wasm32 maximum). YAML key: memory_limit_mb.
	MemoryLimitMB int
	// ProjectMemoryLimitMB caps, in MiB, the memory of a project-mode run's processes
	// together: the interpreter (a session's kernel, over all its calls) and every process
	// it starts. Past it the kernel's OOM killer ends one of them. Enforced on Linux where
	// the executor can make cgroups (doctor says); nowhere else. Default 4096; it must be
	// between 16 and 16777216. YAML key: project_memory_limit_mb.
	ProjectMemoryLimitMB int
	// ProcessLimit caps how many processes (threads included) a project-mode run may have
	// at once: past it, fork fails with EAGAIN in the script. Enforced where
	// ProjectMemoryLimitMB is. Default 256; it must be between 16 and 4194304.
	// YAML key: process_limit.
	ProcessLimit int
	// DiskLimitMB caps, in MiB, what a strict-mode script may store in its private dir: the
	// total size of its files, net of truncation and removal; a write past it fails with
	// ENOSPC (OSError "No space left on device") in the script. A session kernel keeps one
	// budget across its calls. Default 1024; it must be between 1 and 65536.
	// YAML key: disk_limit_mb.
	DiskLimitMB int
	// WarmPool is how many initialized strict interpreters `serve` and `mcp` keep ready, and
	// how many project kernels of the host python for their own working dir, so that a new
	// session's first call does not pay interpreter start-up. Default 2; between 0 and 16.
	// YAML key: warm_pool.
	WarmPool int
	// Timezone is the code_execution.timezone key as written: an IANA time zone name (for
	// example "Europe/Paris"), validated with time.LoadLocation, or "". It takes precedence
	// over the top-level timezone key; [Config.Timezone] is the effective zone.
	// YAML key: timezone.
	Timezone string
	// ConfineToolsToWorkdir makes the file tools (read_file, write_file, patch and
	// search_files) refuse any path that resolves, through symlinks, outside the session
	// working directory. Default false. On Linux with Landlock it also limits what the
	// processes a run starts may write to the working dir and the temp dir (see Landlock).
	// YAML key: confine_tools_to_workdir.
	ConfineToolsToWorkdir bool
	// Landlock is "auto" (the default) or "off": with auto, on Linux with Landlock, the
	// project-mode child, terminal commands and what they start cannot write the executor's
	// state (its caches and interpreter snapshot, config.yaml, token and credential stores,
	// other profiles) nor signal processes they did not start. A YAML boolean is read as
	// Hermes reads it: false (or a bare off) means off, true auto; any other value falls back
	// to auto with a warning. YAML key: landlock.
	Landlock string
}

// Terminal is the terminal section of the configuration file: the environment passed to
// scripts and commands, and the backend they run in (docs/backends/). Hermes's other terminal
// keys (timeout, container_disk, docker_mount_cwd_to_workspace, lifetime_seconds, ...) are
// ignored and listed in [Config.Ignored].
//
// [Load] applies Hermes's environment variables over the file: TERMINAL_ENV (backend),
// TERMINAL_CWD, TERMINAL_DOCKER_IMAGE, TERMINAL_SSH_HOST, TERMINAL_SSH_USER, TERMINAL_SSH_PORT
// and TERMINAL_SSH_KEY; a blank one is unset.
//
// The keys of a backend other than the selected one are still validated, but not used.
type Terminal struct {
	// EnvPassthrough lists exact environment variable names that are passed to scripts even
	// though the environment scrubber would otherwise drop them (for example
	// "HERMES_BASE_URL"). Default empty. Entries must be non-empty and contain no "=";
	// duplicates are removed. Provider credentials managed by the host are never passed,
	// whatever this list says. YAML key: env_passthrough.
	EnvPassthrough []string
	// Backend is where commands run: "local" (the default), "docker", "ssh" or "exec"; see
	// [Backends]. Stored trimmed and lower-case; null or empty means local. Hermes's other
	// backends (modal, daytona, singularity, ...) and any other value are an error, so that
	// nothing runs on this host that was meant to run elsewhere. YAML key: backend.
	Backend string
	// Cwd is the working dir of commands in a remote backend, as written (trimmed), or "" for
	// the backend's own: see [Terminal.RemoteCwd], which gives the effective dir. It does not
	// apply to the local backend, whose commands run in the session's working dir (run and
	// mcp: --workdir; serve: each call's workdir). Default "". YAML key: cwd.
	Cwd string
	// DockerImage is the image of the docker backend's container. Default
	// [DefaultDockerImage]; null or empty means the default. YAML key: docker_image.
	DockerImage string
	// DockerNetwork gives the container a network; false starts it with --network none.
	// Default true. YAML key: docker_network.
	DockerNetwork bool
	// DockerVolumes are bind mounts and volumes of the container, each "source:target" or
	// "source:target:options" (such as "/srv/data:/data:ro"), as docker -v takes them; the
	// target must be an absolute path. Default empty. YAML key: docker_volumes.
	DockerVolumes []string
	// DockerEnv sets variables inside the container, name to value. The file may give a
	// mapping or a list of "NAME=value" strings; names must be valid variable names, and
	// values strings or numbers. Default empty. YAML key: docker_env.
	DockerEnv map[string]string
	// DockerForwardEnv names host variables whose values are passed into the container.
	// Default empty. YAML key: docker_forward_env.
	DockerForwardEnv []string
	// DockerExtraArgs are more arguments of docker run, placed before the image. Default
	// empty. YAML key: docker_extra_args.
	DockerExtraArgs []string
	// ContainerCPU limits the container's CPUs (docker --cpus). Default 1; 0 means no limit,
	// as in Hermes; a number, 0 or more. YAML key: container_cpu.
	ContainerCPU float64
	// ContainerMemoryMB limits the container's memory, in MB (docker --memory). Default 5120;
	// 0 means no limit, as in Hermes. YAML key: container_memory.
	ContainerMemoryMB int
	// ContainerPersistent keeps the container, and what it holds, from one process to the
	// next; false removes it when the executor closes. Default true.
	// YAML key: container_persistent.
	ContainerPersistent bool
	// SSHHost is the ssh backend's host name or address. Required with backend ssh.
	// YAML key: ssh_host.
	SSHHost string
	// SSHUser is the user the ssh backend logs in as. Required with backend ssh.
	// YAML key: ssh_user.
	SSHUser string
	// SSHPort is the ssh backend's port. Default 22; between 1 and 65535. YAML key: ssh_port.
	SSHPort int
	// SSHKey is the private key file of the ssh backend, with a leading "~/" expanded
	// against the user's home, or "" (the default) for ssh's own keys and agent.
	// YAML key: ssh_key.
	SSHKey string
	// SSHKnownHosts is the known-hosts file the ssh backend checks the host key against,
	// "~/" expanded, or "" (the default) for ~/.ssh/known_hosts: see
	// [Terminal.SSHKnownHostsPath]. Not a Hermes key. YAML key: ssh_known_hosts.
	SSHKnownHosts string
	// ExecCommand is the exec backend's command prefix: the program and arguments that run
	// a command in the target, the command's own argv appended (such as ["kubectl", "exec",
	// "-i", "POD", "--"]). Required and non-empty with backend exec. Not a Hermes key.
	// YAML key: exec_command.
	ExecCommand []string
	// ClientEnv names more variables of the executor's environment that a remote backend's
	// local client (the docker CLI, ssh, the exec prefix) gets, besides [ClientEnvNames] and
	// [ClientEnvPrefixes]: what a client needs that they lack, such as HTTPS_PROXY or
	// AWS_PROFILE for kubectl's credential plugin. Exact names, valid variable names; a
	// host-managed credential ([IsManagedCredential], or web.search.api_key_env) is an
	// error. It does not change what a script or a command in the target gets, unless the
	// client passes its own environment on (an exec prefix such as env or setpriv). Default
	// empty. Not a Hermes key. YAML key: client_env.
	ClientEnv []string
}

// RemoteCwd is the effective working dir of a remote backend's commands: terminal.cwd when
// set, else the backend's own: [DefaultDockerCwd] for docker, [DefaultSSHCwd] (the login dir)
// for ssh, "" (the target's own dir) for exec. A Cwd of "." means the default too (it is
// Hermes's default, the current dir of a local backend), and for docker so does any relative
// path, which a container cannot use, as in Hermes. For the local backend it is "": local
// commands run in the session's working dir.
func (t Terminal) RemoteCwd() string {
	cwd := t.Cwd
	if cwd == "." {
		cwd = ""
	}
	switch t.Backend {
	case BackendDocker:
		if !strings.HasPrefix(cwd, "/") {
			return DefaultDockerCwd
		}
	case BackendSSH:
		if cwd == "" {
			return DefaultSSHCwd
		}
	case BackendExec:
	default:
		return ""
	}
	return cwd
}

// SSHKnownHostsPath is the known-hosts file of the ssh backend: SSHKnownHosts, or
// ~/.ssh/known_hosts when it is empty ("" when the user has no home directory).
func (t Terminal) SSHKnownHostsPath() string {
	if t.SSHKnownHosts != "" {
		return t.SSHKnownHosts
	}
	home, err := userHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".ssh", "known_hosts")
}

// userHomeDir is os.UserHomeDir, replaced in tests.
var userHomeDir = os.UserHomeDir

// Session kinds (docs/behaviour.md §8): who is driving the session decides what needs
// approval.
const (
	// KindCLI is a local CLI/TUI/desktop session with a user typing: no
	// whole-script approval; terminal() commands flagged as dangerous are
	// approved one by one.
	KindCLI = "cli"
	// KindGateway is a messaging-gateway session: the whole script is
	// approved before it runs.
	KindGateway = "gateway"
	// KindAutomation is an injected or automated turn (Hermes's cron
	// jobs): nobody is there to approve, so approvals.cron_mode decides —
	// ask (the default: the whole script is approved before it runs, as
	// for a gateway session), deny (blocked at once) or approve (runs
	// without asking).
	KindAutomation = "automation"
)

// Approval request types.
const (
	ApproveScript  = "script"
	ApproveCommand = "command"
)

// Approval scopes: how long an approval holds.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
	ScopeAlways  = "always"
)

// Values of code_execution.landlock: whether the processes a run starts on Linux (the
// project-mode child, terminal commands) are kept from writing the executor's state with
// Landlock (SECURITY.md).
const (
	// LandlockAuto restricts them where the kernel has Landlock (ABI 2, Linux 5.19, or
	// later), and runs them as before elsewhere. The default.
	LandlockAuto = "auto"
	// LandlockOff never restricts them.
	LandlockOff = "off"
)

// LandlockModes lists the code_execution.landlock values.
var LandlockModes = []string{LandlockAuto, LandlockOff}

// Approval modes accepted for approvals.mode.
const (
	// ApprovalsManual asks a person (the serve or MCP client, or the terminal for run) and
	// blocks what needs approval when nobody answers. The default.
	ApprovalsManual = "manual"
	// ApprovalsSmart is Hermes's mode in which a model approves low-risk commands. This
	// executor has no model, so smart behaves exactly as manual.
	ApprovalsSmart = "smart"
	// ApprovalsOff approves everything without asking.
	ApprovalsOff = "off"
	// ApprovalsDeny blocks everything that needs approval, without asking. Not a Hermes mode.
	ApprovalsDeny = "deny"
	// ApprovalsAsk is the former name of manual. The value "ask" is still accepted in the
	// file and stored as "manual".
	ApprovalsAsk = ApprovalsManual
)

// ApprovalModes lists the approvals.mode values, in the order error messages show them.
var ApprovalModes = []string{ApprovalsManual, ApprovalsSmart, ApprovalsOff, ApprovalsDeny}

// Values of approvals.cron_mode: what a script of an automation session (a cron job, an
// injected turn: the executor's "automation" kind) does, since nobody is there to approve it.
const (
	// CronModeAsk asks the connected client, as for a gateway session, and blocks when nobody
	// answers. The default when cron_mode is not set (Hermes's default is deny).
	CronModeAsk = "ask"
	// CronModeDeny blocks the script at once, with Hermes's message.
	CronModeDeny = "deny"
	// CronModeApprove runs the script without asking; its terminal() commands are not asked
	// about either.
	CronModeApprove = "approve"
)

// Approvals is the approvals section of the configuration file (docs/behaviour.md §8).
type Approvals struct {
	// Mode is "manual" (the default), "smart" (behaves as manual), "off" or "deny". YAML
	// reads a bare off as the boolean false, which means "off"; "ask" is stored as "manual";
	// null or empty means the default; any other value falls back to "manual" with a warning,
	// as in Hermes. YAML key: mode.
	Mode string
	// CronMode is "ask" (the default), "deny" or "approve": see [CronModeAsk]. Hermes's
	// spellings off, allow and yes mean approve. An unknown value, or a YAML boolean, means
	// deny with a warning (Hermes reads both as deny). YAML key: cron_mode.
	CronMode string
	// Timeout is how long, in seconds, to wait for an answer before treating the request as
	// denied. Default 120; between 1 and one year. YAML key: timeout.
	Timeout int
}

// Web is the web section of the configuration file.
type Web struct {
	// Search configures web_search. YAML key: search.
	Search WebSearch
	// Extract configures web_extract. YAML key: extract.
	Extract WebExtract
	// AllowPrivateNetworks lets web_extract fetch URLs that resolve to loopback, private,
	// link-local and other internal addresses. Default false. YAML key: allow_private_networks.
	AllowPrivateNetworks bool
}

// WebSearch is the web.search section.
type WebSearch struct {
	// Provider is "searxng", "brave", "tavily", or "" (the default: web_search then reports
	// that no provider is configured). Stored trimmed and lower-case. YAML key: provider.
	Provider string
	// URL is the provider's base URL (http or https): required for searxng, an optional
	// override of the public endpoint for brave and tavily. YAML key: url.
	URL string
	// APIKeyEnv names the host environment variable holding a keyed provider's API key.
	// Default: BRAVE_API_KEY for brave, TAVILY_API_KEY for tavily. The key is read by the
	// host only and never reaches scripts. YAML key: api_key_env.
	APIKeyEnv string
}

// WebExtract is the web.extract section.
type WebExtract struct {
	// CharLimit is web_extract's default char_limit: longer pages are cut head and tail, the
	// full text saved to disk. Default 15000; between 100 and 1000000. YAML key: char_limit.
	CharLimit int
	// CacheMaxMB caps, in MiB, web_extract's cache of full texts ($HERMES_HOME/cache/web),
	// which every run and process with this home shares: past it the least recently used
	// texts are removed. Default 256; between 0 and 65536, and 0 saves no full text.
	// YAML key: cache_max_mb.
	CacheMaxMB int
	// CacheEntryMaxMB is the largest full text the cache keeps, in MiB; a larger one is not
	// saved (the cut content is still returned). Default 8; between 1 and 1024.
	// YAML key: cache_entry_max_mb.
	CacheEntryMaxMB int
	// CacheTTLMinutes is how long a saved full text is kept, in minutes from when it was
	// fetched; after it read_file refuses it and it is removed. Default 1440 (a day); between
	// 1 and 525600 (a year). YAML key: cache_ttl_minutes.
	CacheTTLMinutes int
}

// Error is a configuration problem: a file that cannot be read, invalid YAML, a value of the
// wrong type or out of range in a key this executor uses, or an invalid $HERMES_TIMEZONE.
//
// Callers detect it with errors.As; the command-line front end exits with status 2 on it.
type Error struct {
	// Path is the configuration file, or the source name given to [Parse]; "" for a problem
	// with an environment variable.
	Path string
	// Line is the 1-based line of the offending key or value, or 0 when not known.
	Line int
	// Key is the full dotted key path (for example "code_execution.timeout"), the name of the
	// environment variable, or "" when the problem is not about one key.
	Key string
	// Msg describes the problem and, where possible, how to fix it.
	Msg string
	// Err is the underlying error, such as the file system error of an unreadable file, or
	// nil.
	Err error
}

// Error formats the problem as "<path>: line <n>: <msg>", leaving out the parts not known.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Default returns the configuration used when no file exists: every setting at its default.
func Default() Config {
	return Config{
		CodeExecution: CodeExecution{
			Mode:                    ModeProject,
			Sandbox:                 SandboxNone,
			Timeout:                 DefaultTimeout,
			MaxToolCalls:            50,
			KernelIdleTimeout:       1800,
			MaxSessionKernels:       4,
			MemoryLimitMB:           DefaultMemoryLimitMB,
			ProjectMemoryLimitMB:    DefaultProjectMemoryLimitMB,
			ProcessLimit:            DefaultProcessLimit,
			DiskLimitMB:             1024,
			WarmPool:                2,
			Timezone:                "",
			Landlock:                LandlockAuto,
			SessionStoreMaxMB:       DefaultSessionStoreMaxMB,
			SessionTTL:              DefaultSessionTTL,
			SessionCheckpoint:       CheckpointOff,
			SessionStoreCompression: CompressionFast,
			SessionLease:            DefaultSessionLease,
		},
		Terminal: Terminal{
			EnvPassthrough:      nil,
			Backend:             BackendLocal,
			DockerImage:         DefaultDockerImage,
			DockerNetwork:       true,
			ContainerCPU:        DefaultContainerCPU,
			ContainerMemoryMB:   DefaultContainerMemoryMB,
			ContainerPersistent: true,
			SSHPort:             DefaultSSHPort,
		},
		Web: Web{Extract: WebExtract{
			CharLimit:       DefaultExtractCharLimit,
			CacheMaxMB:      DefaultExtractCacheMaxMB,
			CacheEntryMaxMB: DefaultExtractCacheEntryMaxMB,
			CacheTTLMinutes: DefaultExtractCacheTTLMinutes,
		}},
		Approvals: Approvals{Mode: ApprovalsManual, CronMode: CronModeAsk, Timeout: DefaultApprovalTimeout},
	}
}

// Defaults that code below the configuration falls back to when a caller
// (an embedder building a request by hand) leaves a value zero. [Default]
// uses the same constants, so each default is written once.
const (
	// DefaultTimeout is code_execution.timeout, in seconds.
	DefaultTimeout = 300
	// DefaultMemoryLimitMB is code_execution.memory_limit_mb.
	DefaultMemoryLimitMB = 512
	// DefaultProjectMemoryLimitMB is code_execution.project_memory_limit_mb.
	DefaultProjectMemoryLimitMB = 4096
	// DefaultProcessLimit is code_execution.process_limit.
	DefaultProcessLimit = 256
	// DefaultApprovalTimeout is approvals.timeout, in seconds.
	DefaultApprovalTimeout = 120
	// DefaultSessionStoreMaxMB is code_execution.session_store_max_mb.
	DefaultSessionStoreMaxMB = 256
	// DefaultSessionTTL is code_execution.session_ttl, in seconds (7 days).
	DefaultSessionTTL = 7 * 24 * 3600
	// DefaultSessionLease is code_execution.session_lease, in seconds.
	DefaultSessionLease = 30
)

// The code_execution.session_checkpoint values.
const (
	// CheckpointOff writes a session's kernel to the store when it is evicted, idle or
	// shut down.
	CheckpointOff = "off"
	// CheckpointEveryCall writes it after every call as well.
	CheckpointEveryCall = "every_call"
)

// Checkpoints lists the code_execution.session_checkpoint values.
var Checkpoints = []string{CheckpointOff, CheckpointEveryCall}

// The code_execution.session_store_compression values.
const (
	// CompressionFast compresses images with s2.
	CompressionFast = "fast"
	// CompressionSmall compresses images with zstd.
	CompressionSmall = "small"
)

// Compressions lists the code_execution.session_store_compression values.
var Compressions = []string{CompressionFast, CompressionSmall}

// HermesHome returns the Hermes home directory: $HERMES_HOME when set and non-empty, else
// ~/.hermes, else (when the user has no home directory) .hermes in the system temporary
// directory.
func HermesHome() string {
	if h := os.Getenv("HERMES_HOME"); h != "" {
		return h
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return filepath.Join(home, ".hermes")
	}
	return filepath.Join(os.TempDir(), ".hermes")
}

// Load reads and validates a configuration file, then applies the environment's settings:
// Hermes's TERMINAL_* variables over the terminal section (see [Terminal]), and
// $HERMES_TIMEZONE.
//
// With path "", it reads config.yaml in [HermesHome] if that file exists, and otherwise
// returns [Default] with an empty Source. An explicit path that does not exist is an error.
// Every error is an [*Error].
func Load(path string) (Config, error) {
	p, err := loadFile(path)
	if err != nil {
		return Config{}, err
	}
	// The terminal variables come before finish, which checks what depends on several keys
	// (an ssh backend's host and user may come from either).
	if err := p.terminalEnv(os.Getenv); err != nil {
		return Config{}, err
	}
	if err := p.finish(); err != nil {
		return Config{}, err
	}
	if err := applyEnv(p.cfg, os.Getenv); err != nil {
		return Config{}, err
	}
	return *p.cfg, nil
}

func loadFile(path string) (*parser, error) {
	explicit := path != ""
	if !explicit {
		path = filepath.Join(HermesHome(), FileName)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			cfg := Default()
			return &parser{cfg: &cfg}, nil
		}
		msg := fmt.Sprintf("cannot read configuration file: %v", err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = "configuration file does not exist; check the path or omit it to use " +
				filepath.Join(HermesHome(), FileName)
		}
		return nil, &Error{Path: path, Msg: msg, Err: err}
	}
	if why := trust.Untrusted(path); why != "" {
		// It chooses the mode, the approvals and the tools: a file another user could write
		// would let them run code as this one.
		return nil, &Error{Path: path, Msg: "configuration file may hold what another user wrote (" + why +
			"), so it is not used: make it, and the directories above it, writable only by you or root (chmod go-w, chown)"}
	}
	return parse(data, path)
}

// applyEnv applies the environment's settings (Hermes's $HERMES_TIMEZONE) over the file's.
func applyEnv(cfg *Config, getenv func(string) string) error {
	tz := strings.TrimSpace(getenv(TimezoneEnv))
	if tz == "" {
		return nil
	}
	if err := checkZone(tz); err != nil {
		return &Error{Key: TimezoneEnv, Err: err, Msg: fmt.Sprintf(
			"environment variable %s is %q, which is not an IANA time zone; set it to a name such as \"Europe/Paris\" or \"UTC\", or unset it to use the timezone of the config file", TimezoneEnv, tz)}
	}
	for i, k := range cfg.Used {
		if k.Path == "timezone" || k.Path == "code_execution.timezone" {
			cfg.Used[i].Note = joinNote(k.Note, "overridden by "+TimezoneEnv+"="+tz)
		}
	}
	cfg.Timezone, cfg.TimezoneSource = tz, TimezoneEnv
	return nil
}

// Parse validates configuration file contents. source names the data in error messages and
// becomes [Config.Source]; it may be "". Parse reads no environment variable but $HOME (to
// expand "~/" in terminal.ssh_key and ssh_known_hosts): [Load] applies the TERMINAL_*
// variables and $HERMES_TIMEZONE.
//
// An empty document, or one holding only comments, gives the defaults. Keys that are absent
// keep their defaults. Every error is an [*Error].
func Parse(data []byte, source string) (Config, error) {
	p, err := parse(data, source)
	if err != nil {
		return Config{}, err
	}
	if err := p.finish(); err != nil {
		return Config{}, err
	}
	return *p.cfg, nil
}

// parse walks data into a parser's Config, leaving what depends on several keys to finish.
func parse(data []byte, source string) (*parser, error) {
	cfg := Default()
	cfg.Source = source
	p := &parser{source: source, cfg: &cfg}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return p, nil
		}
		return nil, p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{Path: source, Line: extra.Line,
			Msg: "more than one YAML document; keep a single document (remove the \"---\" separator)"}
	} else if !errors.Is(err, io.EOF) {
		return nil, p.yamlError(err)
	}

	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return p, nil
		}
		root = root.Content[0]
	}
	if err := p.root(root); err != nil {
		return nil, err
	}
	return p, nil
}

// parser walks a decoded node tree into a Config.
type parser struct {
	source string
	cfg    *Config
	lines  struct{ provider, backend, clientEnv int }
	// backendEnv is set when TERMINAL_ENV chose the backend.
	backendEnv bool
	// topTimezone is the top-level timezone key's value.
	topTimezone string
	// merged counts the nodes that merge keys brought in, against maxMerged.
	merged int
	// modeTypo is the unknown key that looks like code_execution.mode or code_execution,
	// and its line.
	modeTypo     string
	modeTypoLine int
}

// maxMerged bounds what merge keys may expand to (twice the number of keys): aliases of
// aliases could otherwise multiply a small file into billions of keys.
const maxMerged = 20000

// maxMergeDepth bounds how deep merged mappings may themselves merge others.
const maxMergeDepth = 8

// yamlLine finds the line number in a yaml.v3 syntax error message.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError converts a yaml.v3 decoding error into an *Error.
func (p *parser) yamlError(err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
		if m[0] == 0 {
			msg = strings.TrimLeft(msg[m[1]:], ": ")
		}
	}
	return &Error{Path: p.source, Line: line, Msg: "invalid YAML: " + msg, Err: err}
}

// errorf builds an *Error about the key path at node n.
func (p *parser) errorf(n *yaml.Node, key, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{Path: p.source, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// warnf records a warning about line.
func (p *parser) warnf(line int, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: line %d: ", sourceName(p.source), line)+fmt.Sprintf(format, args...))
}

// notef records a debug note about line.
func (p *parser) notef(line int, format string, args ...any) {
	p.cfg.Notes = append(p.cfg.Notes, fmt.Sprintf("%s: line %d: ", sourceName(p.source), line)+fmt.Sprintf(format, args...))
}

// field is one known key of a mapping and the function that applies its value.
type field struct {
	name string
	// section marks a nested mapping rather than a setting: it is not listed in Used itself.
	section bool
	apply   func(key string, v *yaml.Node) error
}

func section(name string, apply func(string, *yaml.Node) error) field {
	return field{name: name, section: true, apply: apply}
}

// root walks the top level: every mapping below it and every key it reads come from the
// table of [Settings].
func (p *parser) root(n *yaml.Node) error {
	return p.mapping(n, "", p.fields(""))
}

// mapping checks that n is a mapping (or null, meaning an empty section) and applies each
// known key in document order. A known key given twice is an error. Every other key is
// ignored and recorded in Config.Ignored; one that looks like a misspelling of a known key
// (and is not one of Hermes's own) is also a warning.
func (p *parser) mapping(n *yaml.Node, path string, fields []field) error {
	n = resolveAlias(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		what := "the top level"
		if path != "" {
			what = fmt.Sprintf("%q", path)
		}
		return p.errorf(n, path, "%s must be a mapping of keys to values, got %s", what, describe(n))
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	pairs, err := p.pairs(n, path)
	if err != nil {
		return err
	}
	seen := make(map[string]int, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := resolveAlias(pairs[i]), pairs[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errorf(k, path, "%s has a key that is %s; keys must be plain names",
				describePath(path), describe(k))
		}
		full := joinKey(path, k.Value)
		idx := slices.Index(names, k.Value)
		if idx < 0 {
			p.ignore(full, k, v, path, names)
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			return p.errorf(k, full, "duplicate key %q (first defined at line %d); keep only one", full, prev)
		}
		seen[k.Value] = k.Line
		if err := fields[idx].apply(full, v); err != nil {
			return err
		}
		if !fields[idx].section {
			p.cfg.Used = append(p.cfg.Used, Key{Path: full, Line: k.Line})
		}
	}
	return nil
}

// pairs is the key and value nodes of mapping n with YAML merge keys ("<<: *defaults")
// resolved as Hermes's YAML loader does: the merged mappings' keys first, skipping those n
// sets itself and, among several merged mappings, those an earlier one set.
func (p *parser) pairs(n *yaml.Node, path string) ([]*yaml.Node, error) {
	return p.mergePairs(n, path, 0)
}

func (p *parser) mergePairs(n *yaml.Node, path string, depth int) ([]*yaml.Node, error) {
	var merged []*yaml.Node
	own, explicit := ownPairs(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolveAlias(n.Content[i])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!merge" {
			continue
		}
		v := resolveAlias(n.Content[i+1])
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, src := range sources {
			src = resolveAlias(src)
			if src.Kind != yaml.MappingNode {
				return nil, p.errorf(src, path, "%s has a merge key (<<) whose value is %s; merge a mapping or a list of mappings", describePath(path), describe(src))
			}
			if depth > maxMergeDepth {
				return nil, p.errorf(src, path, "%s: merge keys (<<) nest more than %d deep (a merged mapping that merges another, ...); merge fewer levels", describePath(path), maxMergeDepth)
			}
			sub, err := p.mergePairs(src, path, depth+1)
			if err != nil {
				return nil, err
			}
			// Each merged mapping counts as one key besides its keys: an empty one adds
			// none, and merging {} 20 times over 8 levels would otherwise run 20^8 times.
			if p.merged += len(sub) + 2; p.merged > maxMerged {
				return nil, p.errorf(k, path, "%s: merge keys (<<) expand to more than %d keys; merge fewer mappings", describePath(path), maxMerged/2)
			}
			for j := 0; j+1 < len(sub); j += 2 {
				sk := resolveAlias(sub[j])
				if sk.Kind == yaml.ScalarNode {
					if explicit[sk.Value] {
						continue
					}
					explicit[sk.Value] = true
				}
				merged = append(merged, sub[j], sub[j+1])
			}
		}
	}
	return append(merged, own...), nil
}

// ownPairs is the key and value nodes of mapping n but its merge keys, and the set of
// the scalar keys among them.
func ownPairs(n *yaml.Node) (own []*yaml.Node, explicit map[string]bool) {
	explicit = map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolveAlias(n.Content[i])
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		own = append(own, n.Content[i], n.Content[i+1])
		if k.Kind == yaml.ScalarNode {
			explicit[k.Value] = true
		}
	}
	return own, explicit
}

// ignore records the unknown key k (at path full, in the mapping at parent whose known keys
// are names) as ignored, and warns when it looks like a typo of a known key or is a Hermes
// setting whose absence a user would notice.
func (p *parser) ignore(full string, k, v *yaml.Node, parent string, names []string) {
	note, hermes := hermesKeys[parent][k.Value]
	if warn := hermesWarnings[full]; warn != nil {
		if msg := warn(resolveAlias(v)); msg != "" {
			p.warnf(k.Line, "%s", msg)
		}
	}
	if !hermes {
		if s := suggestKey(k.Value, names); s != "" {
			p.warnf(k.Line, "unknown key %q is ignored; did you mean %q?", full, joinKey(parent, s))
			note = fmt.Sprintf("unknown; did you mean %q?", joinKey(parent, s))
			if j := joinKey(parent, s); j == "code_execution.mode" || j == "code_execution" {
				p.modeTypo, p.modeTypoLine = full, k.Line
			}
		}
	}
	p.cfg.Ignored = append(p.cfg.Ignored, Key{Path: full, Line: k.Line, Note: note})
}

// finish resolves what depends on several keys and fills in Used's values.
func (p *parser) finish() error {
	cfg := p.cfg
	if p.modeTypo != "" && !slices.ContainsFunc(cfg.Used, func(k Key) bool { return k.Path == "code_execution.mode" }) {
		// A typo of the mode key must not drop the sandbox either (the default is project).
		cfg.CodeExecution.Mode = ModeFallback
		p.warnf(p.modeTypoLine, "code_execution.mode is not set, and %q may have been meant to set it: running in %q, the sandbox, so that a typo never runs scripts without it; fix the key's name", p.modeTypo, ModeFallback)
	}
	s := &cfg.Web.Search
	if s.Provider == ProviderSearXNG && s.URL == "" {
		return &Error{Path: p.source, Line: p.lines.provider, Key: "web.search.url",
			Msg: "web.search.url is required for the searxng provider: set it to your SearXNG server's base URL, such as \"http://127.0.0.1:8888\""}
	}
	if s.APIKeyEnv == "" {
		s.APIKeyEnv = DefaultAPIKeyEnv[s.Provider]
	}
	p.finishTimezone()
	if err := p.finishTerminal(); err != nil {
		return err
	}
	for i, k := range cfg.Used {
		s := keyTable[settingIndex[k.Path]]
		cfg.Used[i].Value = displayText(s.shown(cfg))
		if s.note != nil {
			if n := s.note(cfg); n != "" {
				cfg.Used[i].Note = joinNote(k.Note, n)
			}
		}
	}
	return nil
}

// finishTimezone sets the zone in effect: code_execution.timezone, else the top-level
// timezone.
func (p *parser) finishTimezone() {
	cfg := p.cfg
	switch ce := cfg.CodeExecution.Timezone; {
	case ce != "":
		cfg.Timezone, cfg.TimezoneSource = ce, "code_execution.timezone"
		if p.topTimezone != "" && p.topTimezone != ce {
			for i, k := range cfg.Used {
				if k.Path == "timezone" {
					cfg.Used[i].Note = joinNote(k.Note, "overridden by code_execution.timezone")
					p.notef(k.Line, "timezone %q is overridden by code_execution.timezone %q", p.topTimezone, ce)
				}
			}
		}
	case p.topTimezone != "":
		cfg.Timezone, cfg.TimezoneSource = p.topTimezone, "timezone"
	}
}

func (p *parser) mode(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if isNull(n) {
		p.cfg.CodeExecution.Mode = ModeProject
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a string (%q or %q), got %s", key, ModeProject, ModeStrict, describe(n))
	}
	if strings.TrimSpace(n.Value) == "" {
		p.cfg.CodeExecution.Mode = ModeProject
		return nil
	}
	m, ok := NormalizeMode(n.Value)
	p.cfg.CodeExecution.Mode = m
	if !ok {
		p.warnf(n.Line, "%s", UnknownMode(key, n.Value))
	}
	return nil
}

// twoWay reads a key that is one of two values, on and off, into dst: null
// gives def, a YAML boolean true gives on and false off (as Hermes reads a
// bare off), and a string is what norm makes of it (trimmed, compared
// case-insensitively, "" giving def); one norm does not know gives norm's
// fallback, the safer value, with the warning unknown words.
func (p *parser) twoWay(dst *string, def, on, off string, norm func(string) (string, bool), unknown func(key, v string) string) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		if isNull(n) {
			*dst = def
			return nil
		}
		if b, ok := yaml11Bool(n); ok {
			*dst = off
			if b {
				*dst = on
			}
			return nil
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return p.errorf(n, key, "%s must be %q or %q, got %s", key, def, other(def, on, off), describe(n))
		}
		v, ok := norm(n.Value)
		*dst = v
		if !ok {
			p.warnf(n.Line, "%s", unknown(key, n.Value))
		}
		return nil
	}
}

// other is whichever of a and b is not v.
func other(v, a, b string) string {
	if v == a {
		return b
	}
	return a
}

func (p *parser) approvalsMode(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	a := &p.cfg.Approvals
	valid := "manual, smart, off (ask and deny are also accepted)"
	if isNull(n) {
		a.Mode = ApprovalsManual
		return nil
	}
	if b, ok := yaml11Bool(n); ok {
		// Hermes's YAML reads a bare off/no/false as a boolean: false means "off", true
		// "manual".
		a.Mode = ApprovalsOff
		if b {
			a.Mode = ApprovalsManual
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be one of %s, got %s", key, valid, describe(n))
	}
	m, ok := NormalizeApprovalsMode(n.Value)
	a.Mode = m
	if !ok {
		msg := fmt.Sprintf("unknown %s %q; using %q, as Hermes does (valid modes: %s)", key, n.Value, ApprovalsManual, valid)
		p.warnf(n.Line, "%s", msg+didYouMean(fold(n.Value), append(slices.Clone(ApprovalModes), "ask")))
	}
	return nil
}

func (p *parser) cronMode(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	a := &p.cfg.Approvals
	if isNull(n) {
		a.CronMode = CronModeAsk
		return nil
	}
	if _, ok := yaml11Bool(n); ok {
		a.CronMode = CronModeDeny
		p.warnf(n.Line, "%s is %s, which YAML reads as a boolean and Hermes then takes as %q: scripts of automation sessions are blocked. Write %s: approve (quoted \"off\" works too) to run them without asking, or %s: deny to keep blocking them without this warning",
			key, n.Value, CronModeDeny, key, key)
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be %q or %q, got %s", key, CronModeDeny, CronModeApprove, describe(n))
	}
	c, ok := NormalizeCronMode(n.Value)
	a.CronMode = c
	if !ok {
		msg := fmt.Sprintf("unknown %s %q; using %q, as Hermes does (valid: %s, %s; or %s to ask the client)", key, n.Value, CronModeDeny, CronModeDeny, CronModeApprove, CronModeAsk)
		p.warnf(n.Line, "%s", msg+didYouMean(fold(n.Value), CronModes))
	}
	return nil
}

// yaml11Bool reports whether n is a boolean as Hermes's YAML 1.1 loader reads it, and which:
// an unquoted true, false, yes, no, on or off in any of the cases PyYAML accepts (yaml.v3, a
// YAML 1.2 parser, reads yes, no, on and off as strings).
func yaml11Bool(n *yaml.Node) (value, ok bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return false, false
	}
	if t := n.ShortTag(); t != "!!bool" && t != "!!str" {
		return false, false
	}
	v := n.Value
	if v == "" {
		return false, false
	}
	if v != strings.ToLower(v) && v != strings.ToUpper(v) && v != strings.ToUpper(v[:1])+strings.ToLower(v[1:]) {
		return false, false
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	return false, false
}

func (p *parser) provider(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if isNull(n) {
		p.cfg.Web.Search.Provider = ""
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a string (%s), got %s", key, strings.Join(Providers, ", "), describe(n))
	}
	v, ok := NormalizeProvider(n.Value)
	if !ok {
		return p.errorf(n, key, "%s is %q; valid providers: %s%s", key, n.Value, strings.Join(Providers, ", "), didYouMean(v, Providers))
	}
	p.cfg.Web.Search.Provider = v
	p.lines.provider = n.Line
	return nil
}

func (p *parser) webURL(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if isNull(n) {
		p.cfg.Web.Search.URL = ""
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a URL string such as \"http://127.0.0.1:8888\", got %s", key, describe(n))
	}
	v := strings.TrimSpace(n.Value)
	if v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return p.errorf(n, key, "%s is %q, which is not an http(s) URL; use a base URL such as \"http://127.0.0.1:8888\"", key, n.Value)
		}
		if u.User != nil {
			return p.errorf(n, key, "%s must not carry credentials; keyed providers read their key from the variable named by web.search.api_key_env", key)
		}
	}
	p.cfg.Web.Search.URL = v
	return nil
}

// envNameRe is what an environment variable name may look like.
var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (p *parser) envName(dst *string) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		if isNull(n) {
			*dst = ""
			return nil
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || !envNameRe.MatchString(n.Value) {
			return p.errorf(n, key, "%s must name an environment variable (letters, digits and _), such as \"BRAVE_API_KEY\", got %s; put the key itself in that variable, never in config.yaml", key, describe(n))
		}
		*dst = n.Value
		return nil
	}
}

func (p *parser) boolField(dst *bool) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		v, ok := yaml11Bool(n)
		if !ok {
			return p.errorf(n, key, "%s must be true or false, got %s", key, describe(n))
		}
		*dst = v
		return nil
	}
}

// intValue decodes an integer node; want names the expected type in errors and rng the
// accepted range in overflow errors.
func (p *parser) intValue(key string, n *yaml.Node, want, rng string) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && allDigits(n.Value) {
			return 0, p.errorf(n, key, "%s is %s, which is out of range (%s)", key, n.Value, rng)
		}
		return 0, p.errorf(n, key, "%s must be %s, got %s", key, want, describe(n))
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		return 0, p.errorf(n, key, "%s is %s, which is out of range (%s)", key, n.Value, rng)
	}
	return v, nil
}

func intWant(unit string) string {
	if unit != "" {
		return "an integer (" + unit + ")"
	}
	return "an integer"
}

// intField returns an apply function that stores an integer in dst after checking it is in
// [lo, hi]; hi < 0 means no upper bound. unit, when set, is named in type errors.
func (p *parser) intField(dst *int, lo, hi int, unit string) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		v, err := p.intValue(key, n, intWant(unit), rangeText(lo, hi))
		if err != nil {
			return err
		}
		if v < int64(lo) || (hi >= 0 && v > int64(hi)) {
			return p.errorf(n, key, "%s is %d, which is out of range (%s)", key, v, rangeText(lo, hi))
		}
		*dst = int(v)
		return nil
	}
}

// atLeastOne returns an apply function for a positive integer where, as in Hermes, a value
// below 1 is clamped to 1 (a debug note, not an error).
func (p *parser) atLeastOne(dst *int, unit string) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		v, err := p.intValue(key, n, intWant(unit), "must be a 64-bit integer")
		if err != nil {
			return err
		}
		if v < 1 {
			p.notef(n.Line, "%s is %d; using 1 (values below 1 clamp to 1, as in Hermes)", key, v)
			v = 1
		}
		if v > 1<<31-1 {
			v = 1<<31 - 1
		}
		*dst = int(v)
		return nil
	}
}

// zone returns an apply function for a time zone key: an IANA name, or null or empty for
// none.
func (p *parser) zone(dst *string) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		if isNull(n) {
			*dst = ""
			return nil
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return p.errorf(n, key, "%s must be a string naming an IANA time zone (for example \"Europe/Paris\"), got %s", key, describe(n))
		}
		tz := strings.TrimSpace(n.Value)
		if tz == "" {
			*dst = ""
			return nil
		}
		if err := checkZone(tz); err != nil {
			if errors.Is(err, errLocalZone) {
				return p.errorf(n, key, "%s must name an IANA time zone such as \"Europe/Paris\" or \"UTC\", not \"Local\"", key)
			}
			return &Error{Path: p.source, Line: n.Line, Key: key, Err: err,
				Msg: fmt.Sprintf("%s: unknown time zone %q; use an IANA name such as \"Europe/Paris\" or \"UTC\"", key, tz)}
		}
		*dst = tz
		return nil
	}
}

var errLocalZone = errors.New(`"Local" is not a zone name`)

// checkZone reports whether tz names an IANA time zone.
func checkZone(tz string) error {
	if tz == "Local" {
		return errLocalZone
	}
	_, err := time.LoadLocation(tz)
	return err
}

func (p *parser) envPassthrough(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if isNull(n) {
		p.cfg.Terminal.EnvPassthrough = nil
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, key, "%s must be a list of environment variable names, got %s", key, describe(n))
	}
	var names []string
	seen := make(map[string]bool, len(n.Content))
	for i, item := range n.Content {
		item = resolveAlias(item)
		ik := fmt.Sprintf("%s[%d]", key, i)
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
			return p.errorf(item, ik, "%s must be a string naming an environment variable, got %s", ik, describe(item))
		}
		name := item.Value
		switch {
		case strings.TrimSpace(name) == "":
			return p.errorf(item, ik, "%s is empty; list exact variable names", ik)
		case strings.ContainsRune(name, '='):
			return p.errorf(item, ik, "%s is %q, which contains \"=\"; list variable names only, not NAME=value", ik, name)
		case strings.ContainsAny(name, "\x00"):
			return p.errorf(item, ik, "%s contains a NUL byte", ik)
		case strings.TrimSpace(name) != name:
			return p.errorf(item, ik, "%s is %q, which has leading or trailing spaces; list exact variable names", ik, name)
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	p.cfg.Terminal.EnvPassthrough = names
	return nil
}

// resolveAlias follows an alias node to the node it names.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n != nil && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names the type (and, for short scalars, the value) of a node for error messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	var kind string
	switch n.ShortTag() {
	case "!!null":
		return "null (an empty value)"
	case "!!str":
		kind = "string"
	case "!!int":
		kind = "integer"
	case "!!float":
		kind = "float"
	case "!!bool":
		kind = "boolean"
	default:
		kind = "value tagged " + n.ShortTag()
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return fmt.Sprintf("%s %q", kind, v)
}

func describePath(path string) string {
	if path == "" {
		return "the top level"
	}
	return fmt.Sprintf("%q", path)
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func sourceName(s string) string {
	if s == "" {
		return "config"
	}
	return s
}

func rangeText(lo, hi int) string {
	if hi < 0 {
		return fmt.Sprintf("must be %d or more", lo)
	}
	return fmt.Sprintf("must be between %d and %d", lo, hi)
}

func allDigits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// suggestMaxLen bounds the names suggest and suggestKey compare: a longer
// one cannot be within distance 2 of a short valid name anyway.
const suggestMaxLen = 64

// suggest returns the valid name closest to k when it is within edit distance 2, else "".
func suggest(k string, names []string) string {
	best, bestD := "", 3
	lk := strings.ToLower(k)
	if len(lk) > suggestMaxLen {
		return ""
	}
	for _, n := range names {
		if d := textdist.Distance(lk, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// suggestKey is suggest for key names: a name of four letters or fewer must be within edit
// distance 1 (any short word is within 2 of "web" or "mode"), a longer one within 2.
func suggestKey(k string, names []string) string {
	best, bestD := "", 3
	lk := strings.ToLower(k)
	for _, n := range names {
		limit := 2
		if len(n) <= 4 {
			limit = 1
		}
		if len(lk) <= suggestMaxLen {
			if d := textdist.Distance(lk, n); d <= limit && d < bestD {
				best, bestD = n, d
			}
		}
	}
	if best == "" {
		for _, n := range names {
			if partOf(lk, n) || partOf(n, lk) {
				return n
			}
		}
	}
	return best
}

// partOf reports whether long is short with one more underscore-separated word before or
// after it, as in memory_limit for memory_limit_mb or approval_mode for mode: a unit or a
// prefix left off or added, which the edit distance misses.
func partOf(short, long string) bool {
	if len(short) < 4 {
		return false
	}
	return strings.HasPrefix(long, short+"_") && !strings.Contains(long[len(short)+1:], "_") ||
		strings.HasSuffix(long, "_"+short) && !strings.Contains(long[:len(long)-len(short)-1], "_")
}

// Defaults of the listener settings of `serve --listen` and `mcp --http`: command flags, not
// keys of the file (they belong to one server process, not to Hermes's configuration).
const (
	// DefaultAuthTimeout is --auth-timeout: how long a new connection has to authenticate
	// (serve: to call authenticate on a TCP listener; mcp --http: to send a request's
	// headers, which carry the token) before it is closed.
	DefaultAuthTimeout = 10 * time.Second
	// DefaultMaxUnauthenticated is --max-unauthenticated: how many connections that have not
	// authenticated yet may be open at a time; one beyond it is closed at once.
	DefaultMaxUnauthenticated = 64
	// DefaultHTTPIdleTimeout is mcp --http's --idle-timeout: how long an authenticated
	// keep-alive connection may wait for its next request. Longer than the keep-alive of
	// common clients and proxies (Go's 90 s, nginx's 75 s), so that they close first.
	DefaultHTTPIdleTimeout = 5 * time.Minute
	// DefaultDrainTimeout is mcp --http's --drain-timeout: how long a draining server lets
	// running calls finish before it interrupts them.
	DefaultDrainTimeout = 30 * time.Second
)
