package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Setting describes one key of config.yaml that this executor reads. The table of them,
// [Settings], is the one description of the keys: it drives the parser (each key's type,
// range and accepted values), [Config.Used]'s values, [WithDefaults], doctor's display of
// the configuration in effect and the key table of docs/configuration.md.
type Setting struct {
	// Path is the full dotted key path, such as "code_execution.timeout".
	Path string
	// Type is the YAML type of the value: "string", "integer", "number", "boolean", "list"
	// (of strings), "mapping" or "enum" (a string out of Values).
	Type string
	// Values lists an enum's canonical values; nil for other types.
	Values []string
	// Accepts says what values are accepted and what the others become: a range
	// ("1..86400"), an enum's values and its fallback, what a string must be.
	Accepts string
	// Default is the value when the key is absent, as YAML text.
	Default string
	// Hermes is true for a key of Hermes Agent's own configuration, false for a key only
	// this executor reads.
	Hermes bool
	// Backends lists the terminal backends the key applies to; nil means every backend.
	Backends []string
	// Doc says in one line what the key does.
	Doc string

	// apply returns the function that parses the key's value into p's Config.
	apply func(p *parser) applyFunc
	// value is the key's value in effect: a string, int, float64, bool or []string.
	value func(c *Config) any
	// used, when set, is the value [Config.Used] shows instead of value (the key as
	// written where the value in effect is derived from more than the file).
	used func(c *Config) any
	// note, when set, is what [Config.Used] adds to the key's note about its value in c.
	note func(c *Config) string
	// fill, when set, gives the field def's value when its zero value is not a valid
	// setting ([WithDefaults]).
	fill func(c *Config, def *Config)
}

// applyFunc parses the value node of the key at a dotted path.
type applyFunc = func(key string, n *yaml.Node) error

// Settings returns the keys this executor reads, in the order the documentation lists them.
func Settings() []Setting {
	out := slices.Clone(keyTable)
	def := Default()
	for i, s := range out {
		if s.Default == "" {
			out[i].Default = displayText(s.shown(&def))
		}
		out[i].Values = slices.Clone(s.Values)
		out[i].Backends = slices.Clone(s.Backends)
	}
	return out
}

// Value is the key's value in effect in c: a string, int, float64, bool or []string (the
// names only of terminal.docker_env, whose values may be secrets).
func (s Setting) Value(c Config) any { return s.value(&c) }

// Applies reports whether the key is used with c's terminal backend.
func (s Setting) Applies(c Config) bool {
	return s.Backends == nil || slices.Contains(s.Backends, c.Terminal.Backend)
}

// shown is the value [Config.Used] shows.
func (s Setting) shown(c *Config) any {
	if s.used != nil {
		return s.used(c)
	}
	return s.value(c)
}

// WithDefaults returns c with the defaults of [Default] in every field whose zero value is
// not a valid setting (an integer whose minimum is above 0, an enum or string whose empty
// value the file reads as its default, a keyed provider's api_key_env), so that a Config
// built in code needs only the fields it means to set. Fields whose zero value means
// something keep it (max_tool_calls, warm_pool and cache_max_mb 0 mean none; booleans are
// false). Its lists are copies, so that c's caller may change its own.
func WithDefaults(c Config) Config {
	def := Default()
	for _, s := range keyTable {
		if s.fill != nil {
			s.fill(&c, &def)
		}
	}
	return c
}

// displayText formats a value for [Config.Used] and the Default of [Settings].
func displayText(v any) string {
	switch v := v.(type) {
	case []string:
		return listText(v)
	case string:
		if v == "" {
			return `""`
		}
	}
	return fmt.Sprint(v)
}

// settingIndex finds a key of keyTable by its path.
var settingIndex = func() map[string]int {
	m := make(map[string]int, len(keyTable))
	for i, s := range keyTable {
		m[s.Path] = i
	}
	return m
}()

// fields is the mapping at path as the parser walks it: its keys in table order, each
// either a setting of the table or a section holding some.
func (p *parser) fields(path string) []field {
	var out []field
	prefix := joinKey(path, "")
	if path == "" {
		prefix = ""
	}
	for _, s := range keyTable {
		rest, ok := strings.CutPrefix(s.Path, prefix)
		if !ok {
			continue
		}
		name, _, nested := strings.Cut(rest, ".")
		if slices.ContainsFunc(out, func(f field) bool { return f.name == name }) {
			continue
		}
		if nested {
			out = append(out, section(name, func(key string, n *yaml.Node) error {
				return p.mapping(n, key, p.fields(key))
			}))
			continue
		}
		out = append(out, field{name: name, apply: s.apply(p)})
	}
	return out
}

// ours marks a key only this executor reads.
func (s Setting) ours() Setting { s.Hermes = false; return s }

// on marks a key of the given terminal backends only.
func (s Setting) on(backends ...string) Setting { s.Backends = backends; return s }

// doc sets the key's one-line documentation.
func (s Setting) doc(d string) Setting { s.Doc = d; return s }

// accepts sets what the key accepts.
func (s Setting) accepts(a string) Setting { s.Accepts = a; return s }

// withDefault sets the documented default, for one that depends on other keys.
func (s Setting) withDefault(d string) Setting { s.Default = d; return s }

// key builds the Setting of the field get gives, parsed by apply.
func key[T any](path, typ string, get func(*Config) *T, apply func(p *parser, dst *T) applyFunc) Setting {
	return Setting{
		Path: path, Type: typ, Hermes: true,
		apply: func(p *parser) applyFunc { return apply(p, get(p.cfg)) },
		value: func(c *Config) any { return *get(c) },
	}
}

// zeroFill is a fill that gives an int or string field its default when it is zero.
func zeroFill[T comparable](get func(*Config) *T) func(c, def *Config) {
	return func(c, def *Config) {
		var zero T
		if *get(c) == zero {
			*get(c) = *get(def)
		}
	}
}

// intKey is an integer in [lo, hi] (hi < 0: no upper bound); unit is named in type errors.
func intKey(path string, get func(*Config) *int, lo, hi int, unit string) Setting {
	s := key(path, "integer", get, func(p *parser, dst *int) applyFunc { return p.intField(dst, lo, hi, unit) })
	s.Accepts = fmt.Sprintf("%d..%d", lo, hi)
	if hi < 0 {
		s.Accepts = fmt.Sprintf("%d or more", lo)
	}
	if lo > 0 {
		s.fill = zeroFill(get)
	}
	return s
}

// clampKey is a positive integer where, as in Hermes, a value below 1 is clamped to 1.
func clampKey(path string, get func(*Config) *int, unit string) Setting {
	s := key(path, "integer", get, func(p *parser, dst *int) applyFunc { return p.atLeastOne(dst, unit) })
	s.Accepts = "1 or more; below 1 clamps to 1"
	s.fill = zeroFill(get)
	return s
}

func boolKey(path string, get func(*Config) *bool) Setting {
	return key(path, "boolean", get, func(p *parser, dst *bool) applyFunc { return p.boolField(dst) }).accepts("true, false")
}

// stringKey is a string checked by c; null or empty gives def, which WithDefaults fills
// in as well when it is not empty.
func stringKey(path string, get func(*Config) *string, def string, c check) Setting {
	s := key(path, "string", get, func(p *parser, dst *string) applyFunc { return p.stringField(dst, def, c) })
	if def != "" {
		s.fill = zeroFill(get)
	}
	return s
}

// listKey is a list of strings, each checked by c; what names the items in type errors.
func listKey(path string, get func(*Config) *[]string, what string, c check) Setting {
	s := key(path, "list", get, func(p *parser, dst *[]string) applyFunc { return p.stringList(dst, what, c) })
	s.fill = cloneList(get)
	return s
}

// argKey is a list of command arguments; what names them in type errors.
func argKey(path string, get func(*Config) *[]string, what string) Setting {
	s := key(path, "list", get, func(p *parser, dst *[]string) applyFunc { return p.argList(dst, what) })
	s.fill = cloneList(get)
	return s
}

// cloneList is a fill that copies a list, so that WithDefaults's result shares none.
func cloneList(get func(*Config) *[]string) func(c, def *Config) {
	return func(c, _ *Config) { *get(c) = slices.Clone(*get(c)) }
}

// enumKey is a string out of values, parsed by apply; an empty value reads as the default.
func enumKey(path string, get func(*Config) *string, values []string, apply func(p *parser, dst *string) applyFunc) Setting {
	s := key(path, "enum", get, apply)
	s.Values = values
	s.fill = zeroFill(get)
	return s
}

// zoneKey is an IANA time zone name, or null or empty for none.
func zoneKey(path string, get func(*Config) *string) Setting {
	return key(path, "string", get, func(p *parser, dst *string) applyFunc { return p.zone(dst) }).
		accepts("an IANA time zone name, such as `Asia/Tokyo`")
}

// method adapts a parser method that knows its own field.
func method(f func(p *parser) applyFunc) func(*parser, *string) applyFunc {
	return func(p *parser, _ *string) applyFunc { return f(p) }
}

// remote are the backends that are not local.
var remote = []string{BackendDocker, BackendSSH, BackendExec}

// keyTable is the table of [Settings]. Its order is the documentation's, and within a
// section the parser's (the "did you mean" of a misspelt key prefers the first of equally
// near names).
var keyTable = []Setting{
	// The file's key is read into the parser's topTimezone; Timezone is the zone in effect.
	zoneKey("timezone", func(c *Config) *string { return &c.Timezone }).
		withApply(func(p *parser) applyFunc { return p.zone(&p.topTimezone) }).
		doc("TZ for scripts and `terminal()` commands; `code_execution.timezone` and `HERMES_TIMEZONE` override it"),

	enumKey("code_execution.mode", func(c *Config) *string { return &c.CodeExecution.Mode }, Modes,
		method(func(p *parser) applyFunc { return p.mode })).
		accepts("`project`, `strict`; null or empty: `project`; anything else: `strict`, with a warning").
		doc("where scripts run: a native python in the working dir, or the WebAssembly sandbox ([modes.md](modes.md))"),
	enumKey("code_execution.sandbox", func(c *Config) *string { return &c.CodeExecution.Sandbox }, Sandboxes,
		// A YAML boolean is on (wasm) or off (none); a typo gives wasm, the sandbox.
		func(p *parser, dst *string) applyFunc {
			return p.twoWay(dst, SandboxNone, SandboxWasm, SandboxNone, NormalizeSandbox, UnknownSandbox)
		}).ours().
		accepts("`none`, `wasm` (a YAML boolean: on or off); anything else: `wasm`, with a warning").
		doc("`wasm`: project mode runs scripts in the embedded interpreter over the working dir ([modes.md](modes.md))"),
	listKey("code_execution.wasm_packages", func(c *Config) *[]string { return &c.CodeExecution.WasmPackages },
		"absolute paths of package dirs", checkAbsPath).ours().
		accepts("absolute paths (`~/` expanded)").
		doc("dirs of pure-Python packages the WASI interpreter imports read-only (strict and sandboxed), at `/.hermes-packages/N`; fill one with `hermes-wasm-exec packages install --dir DIR WHEEL.whl...`"),
	stringKey("code_execution.session_store", func(c *Config) *string { return &c.CodeExecution.SessionStore }, "", checkStorePath).ours().
		accepts("an absolute path (`~/` expanded), or `s3://bucket/prefix`; empty: off").
		doc("where session kernels are suspended when evicted, idle or at shutdown, and resumed on their next call: a dir, or an S3-compatible store ([service.md](service.md#durable-session-kernels))"),
	intKey("code_execution.session_store_max_mb", func(c *Config) *int { return &c.CodeExecution.SessionStoreMaxMB }, 1, MaxDiskLimitMB, "MiB").ours().
		doc("a session's kernel images together, MiB; a kernel past it is closed, not suspended"),
	enumKey("code_execution.session_store_compression", func(c *Config) *string { return &c.CodeExecution.SessionStoreCompression }, Compressions,
		func(p *parser, dst *string) applyFunc { return p.stringField(dst, CompressionFast, checkCompression) }).ours().
		accepts("`fast`, `small`; null or empty: `fast`").
		doc("`fast`: s2 (a suspension of the usual kernel in ~20 ms, image ~3.5 MB); `small`: zstd (image ~2.1 MB, ~3x the time)"),
	intKey("code_execution.session_ttl", func(c *Config) *int { return &c.CodeExecution.SessionTTL }, 0, -1, "seconds").ours().
		doc("seconds an image stays in the store unwritten before it is removed; 0: until its session closes"),
	enumKey("code_execution.session_checkpoint", func(c *Config) *string { return &c.CodeExecution.SessionCheckpoint }, Checkpoints,
		func(p *parser, dst *string) applyFunc { return p.stringField(dst, CheckpointOff, checkCheckpoint) }).ours().
		accepts("`off`, `every_call`; null or empty: `off`").
		doc("`every_call`: a session's kernel is also written to the store after each call, so a crash loses at most the call in flight"),
	intKey("code_execution.session_lease", func(c *Config) *int { return &c.CodeExecution.SessionLease }, MinSessionLease, MaxSessionLease, "seconds").ours().
		doc("seconds a session's lease lasts unless renewed: another executor sharing the store takes the session over once it lapses"),
	intKey("code_execution.timeout", func(c *Config) *int { return &c.CodeExecution.Timeout }, MinTimeout, MaxTimeout, "seconds").
		doc("seconds one execution may run"),
	intKey("code_execution.max_tool_calls", func(c *Config) *int { return &c.CodeExecution.MaxToolCalls }, 0, -1, "").
		doc("tool calls per execution; 0: none"),
	clampKey("code_execution.kernel_idle_timeout", func(c *Config) *int { return &c.CodeExecution.KernelIdleTimeout }, "seconds").
		doc("seconds an idle session kernel is kept"),
	clampKey("code_execution.max_session_kernels", func(c *Config) *int { return &c.CodeExecution.MaxSessionKernels }, "").
		doc("top-level kernels alive at once (more wait, [behaviour.md §7](behaviour.md))"),
	intKey("code_execution.memory_limit_mb", func(c *Config) *int { return &c.CodeExecution.MemoryLimitMB }, MinMemoryLimitMB, MaxMemoryLimitMB, "MiB").
		doc("strict mode's guest memory, MiB"),
	intKey("code_execution.project_memory_limit_mb", func(c *Config) *int { return &c.CodeExecution.ProjectMemoryLimitMB }, MinProjectMemoryLimitMB, MaxProjectMemoryLimitMB, "MiB").ours().
		doc("project mode: the memory of a run's processes together, MiB (below)"),
	intKey("code_execution.process_limit", func(c *Config) *int { return &c.CodeExecution.ProcessLimit }, MinProcessLimit, MaxProcessLimit, "").ours().
		doc("project mode: a run's processes and threads at once (below)"),
	intKey("code_execution.disk_limit_mb", func(c *Config) *int { return &c.CodeExecution.DiskLimitMB }, MinDiskLimitMB, MaxDiskLimitMB, "MiB").
		doc("strict mode: what a script may store in its private dir, MiB"),
	intKey("code_execution.warm_pool", func(c *Config) *int { return &c.CodeExecution.WarmPool }, 0, 16, "").
		doc("`serve` and `mcp`: strict interpreters and project kernels kept ready"),
	zoneKey("code_execution.timezone", func(c *Config) *string { return &c.CodeExecution.Timezone }).
		doc("overrides the top-level `timezone` for this executor"),
	boolKey("code_execution.confine_tools_to_workdir", func(c *Config) *bool { return &c.CodeExecution.ConfineToolsToWorkdir }).
		doc("true: the file tools refuse paths outside the session dir; with Landlock, a run's processes write only there and in the temp dir"),
	enumKey("code_execution.landlock", func(c *Config) *string { return &c.CodeExecution.Landlock }, LandlockModes,
		// A typo gives auto, the safer value.
		func(p *parser, dst *string) applyFunc {
			return p.twoWay(dst, LandlockAuto, LandlockAuto, LandlockOff, NormalizeLandlock, unknownLandlock)
		}).ours().
		accepts("`auto`, `off` (a YAML boolean: true or false); anything else: `auto`, with a warning").
		doc("`auto`: on Linux, a run's processes cannot write the executor's state (below)"),

	listKey("terminal.env_passthrough", func(c *Config) *[]string { return &c.Terminal.EnvPassthrough }, "", nil).
		withApply(func(p *parser) applyFunc { return p.envPassthrough }).
		accepts("variable names").
		doc("exact names that reach scripts and terminal commands"),
	enumKey("terminal.backend", func(c *Config) *string { return &c.Terminal.Backend }, Backends,
		method(func(p *parser) applyFunc { return p.backend })).
		accepts("`local`, `docker`, `ssh`, `exec`; null or empty: `local`; `modal`, `daytona`, `singularity` or anything else: an error").
		doc("where `terminal()` commands, the file tools and project-mode scripts run ([backends/](backends/))"),
	stringKey("terminal.cwd", func(c *Config) *string { return &c.Terminal.Cwd }, "", checkCwd).on(remote...).
		withValue(func(c *Config) any {
			if c.Terminal.Backend == BackendLocal {
				return c.Terminal.Cwd
			}
			return c.Terminal.RemoteCwd()
		}).
		withNote(func(c *Config) string {
			if c.Terminal.Backend == BackendLocal {
				return "applies to remote backends only; local commands run in the session's working dir"
			}
			return ""
		}).
		accepts("a path in the target").
		doc("the commands' working dir; `\"\"` or `.`: `/root` (docker), `~` (ssh), the target's (exec)"),
	stringKey("terminal.docker_image", func(c *Config) *string { return &c.Terminal.DockerImage }, DefaultDockerImage, checkImage).on(BackendDocker).
		accepts("an image name").
		doc("the container's image"),
	boolKey("terminal.docker_network", func(c *Config) *bool { return &c.Terminal.DockerNetwork }).on(BackendDocker).
		doc("false starts the container with `--network none`"),
	listKey("terminal.docker_volumes", func(c *Config) *[]string { return &c.Terminal.DockerVolumes },
		"volumes such as \"/srv/data:/data:ro\"", checkVolume).on(BackendDocker).
		accepts("`source:/target[:options]`").
		doc("bind mounts and volumes, as `docker -v` takes them"),
	{
		Path: "terminal.docker_env", Type: "mapping", Hermes: true, Backends: []string{BackendDocker}, Default: "{}",
		Accepts: "`NAME: value` (or a list of `\"NAME=value\"`)",
		Doc:     "variables set in the container (doctor shows their names only)",
		apply:   func(p *parser) applyFunc { return p.dockerEnv },
		value:   func(c *Config) any { return slices.Sorted(maps.Keys(c.Terminal.DockerEnv)) },
		note: func(c *Config) string {
			if len(c.Terminal.DockerEnv) > 0 {
				return "names only; values not shown"
			}
			return ""
		},
	},
	listKey("terminal.docker_forward_env", func(c *Config) *[]string { return &c.Terminal.DockerForwardEnv },
		"environment variable names", checkEnvName).on(BackendDocker).
		accepts("variable names").
		doc("host variables whose values reach the container"),
	argKey("terminal.docker_extra_args", func(c *Config) *[]string { return &c.Terminal.DockerExtraArgs }, "arguments of docker run").on(BackendDocker).
		accepts("strings or numbers").
		doc("more arguments of `docker run`, before the image"),
	key("terminal.container_cpu", "number", func(c *Config) *float64 { return &c.Terminal.ContainerCPU },
		func(p *parser, dst *float64) applyFunc { return p.cpuField(dst) }).on(BackendDocker).
		accepts("0 or more; 0: no limit").
		doc("the container's CPUs (`docker --cpus`)"),
	intKey("terminal.container_memory", func(c *Config) *int { return &c.Terminal.ContainerMemoryMB }, 0, -1, "MB").on(BackendDocker).
		accepts("0 or more; 0: no limit").
		doc("the container's memory, MB (`docker --memory`)"),
	boolKey("terminal.container_persistent", func(c *Config) *bool { return &c.Terminal.ContainerPersistent }).on(BackendDocker).
		doc("keep the container, and what it holds, from one run to the next"),
	stringKey("terminal.ssh_host", func(c *Config) *string { return &c.Terminal.SSHHost }, "", checkSSHName).on(BackendSSH).
		accepts("a host name or address; required with ssh").
		doc("the host commands run on"),
	stringKey("terminal.ssh_user", func(c *Config) *string { return &c.Terminal.SSHUser }, "", checkSSHName).on(BackendSSH).
		accepts("a user name; required with ssh").
		doc("the user ssh logs in as"),
	intKey("terminal.ssh_port", func(c *Config) *int { return &c.Terminal.SSHPort }, 1, 65535, "").on(BackendSSH).
		doc("ssh's port"),
	stringKey("terminal.ssh_key", func(c *Config) *string { return &c.Terminal.SSHKey }, "", checkPath).on(BackendSSH).
		accepts("a path (`~/` expanded)").
		doc("the private key file; `\"\"`: ssh's own keys and agent"),
	stringKey("terminal.ssh_known_hosts", func(c *Config) *string { return &c.Terminal.SSHKnownHosts }, "", checkPath).on(BackendSSH).ours().
		withValue(func(c *Config) any { return c.Terminal.SSHKnownHostsPath() }).
		withUsed(func(c *Config) any { return c.Terminal.SSHKnownHosts }).
		accepts("a path (`~/` expanded)").
		doc("the known-hosts file the host key is checked against; `\"\"`: `~/.ssh/known_hosts`"),
	argKey("terminal.exec_command", func(c *Config) *[]string { return &c.Terminal.ExecCommand },
		"the command prefix, such as [\"kubectl\", \"exec\", \"-i\", \"POD\", \"--\"]").on(BackendExec).ours().
		accepts("the program and its arguments; required with exec").
		doc("the command prefix that runs a command in the target: `[\"kubectl\", \"exec\", \"-i\", \"POD\", \"--\"]`"),
	listKey("terminal.client_env", func(c *Config) *[]string { return &c.Terminal.ClientEnv }, "", nil).on(remote...).ours().
		withApply(func(p *parser) applyFunc { return p.clientEnv }).
		accepts("variable names, not host-managed credentials").
		doc("more variables a backend's client gets: `[HTTPS_PROXY, AWS_PROFILE]`"),

	enumKey("web.search.provider", func(c *Config) *string { return &c.Web.Search.Provider }, Providers,
		method(func(p *parser) applyFunc { return p.provider })).
		accepts("`searxng`, `brave`, `tavily`; anything else: an error").
		doc("web_search's provider; unset: web_search says none is configured"),
	stringKey("web.search.url", func(c *Config) *string { return &c.Web.Search.URL }, "", nil).
		withApply(func(p *parser) applyFunc { return p.webURL }).
		accepts("an http(s) URL").
		doc("the provider's base URL: required for searxng, an optional override for the others"),
	key("web.search.api_key_env", "string", func(c *Config) *string { return &c.Web.Search.APIKeyEnv },
		func(p *parser, dst *string) applyFunc { return p.envName(dst) }).
		withFill(func(c, _ *Config) {
			if c.Web.Search.APIKeyEnv == "" {
				c.Web.Search.APIKeyEnv = DefaultAPIKeyEnv[c.Web.Search.Provider]
			}
		}).
		withDefault("`BRAVE_API_KEY`, `TAVILY_API_KEY`").
		accepts("a variable name").
		doc("keyed providers: the host variable holding the key, which never reaches scripts"),
	intKey("web.extract.char_limit", func(c *Config) *int { return &c.Web.Extract.CharLimit }, MinExtractCharLimit, MaxExtractCharLimit, "characters").
		doc("web_extract's default `char_limit`: a longer page is cut, its full text saved"),
	intKey("web.extract.cache_max_mb", func(c *Config) *int { return &c.Web.Extract.CacheMaxMB }, 0, MaxExtractCacheMaxMB, "MiB").ours().
		doc("the saved full texts of cut pages, MiB; 0: none saved (below)"),
	intKey("web.extract.cache_entry_max_mb", func(c *Config) *int { return &c.Web.Extract.CacheEntryMaxMB }, 1, MaxExtractCacheEntryMaxMB, "MiB").ours().
		doc("the largest full text saved, MiB"),
	intKey("web.extract.cache_ttl_minutes", func(c *Config) *int { return &c.Web.Extract.CacheTTLMinutes }, 1, MaxExtractCacheTTLMinutes, "minutes").ours().
		doc("minutes a full text is kept after its fetch"),
	boolKey("web.allow_private_networks", func(c *Config) *bool { return &c.Web.AllowPrivateNetworks }).
		doc("true lets web_extract fetch loopback, private and link-local hosts"),

	enumKey("approvals.mode", func(c *Config) *string { return &c.Approvals.Mode }, ApprovalModes,
		method(func(p *parser) applyFunc { return p.approvalsMode })).
		accepts("`manual`, `smart` (= manual: no model here), `off`, `deny`, `ask` (= manual); a YAML boolean false: `off`; anything else: `manual`, with a warning").
		doc("how scripts and dangerous commands are approved ([behaviour.md §8](behaviour.md))"),
	enumKey("approvals.cron_mode", func(c *Config) *string { return &c.Approvals.CronMode }, CronModes,
		method(func(p *parser) applyFunc { return p.cronMode })).
		accepts("`deny`, `approve` (or `off`, `allow`, `yes`), `ask`; a YAML boolean or anything else: `deny`, with a warning").
		doc("automation sessions' scripts: blocked, run without asking, or asked about (Hermes's default is deny)"),
	intKey("approvals.timeout", func(c *Config) *int { return &c.Approvals.Timeout }, 1, MaxApprovalTimeout, "seconds").
		doc("seconds to wait for an answer before blocking"),
}

// withApply replaces the key's parser by a parser method that knows its own field.
func (s Setting) withApply(f func(p *parser) applyFunc) Setting { s.apply = f; return s }

// withValue replaces how the key's value in effect is read.
func (s Setting) withValue(f func(c *Config) any) Setting { s.value = f; return s }

// withUsed sets the value [Config.Used] shows when it differs from the value in effect.
func (s Setting) withUsed(f func(c *Config) any) Setting { s.used = f; return s }

// withNote sets what [Config.Used] adds to the key's note.
func (s Setting) withNote(f func(c *Config) string) Setting { s.note = f; return s }

// withFill sets how [WithDefaults] fills the key.
func (s Setting) withFill(f func(c, def *Config)) Setting { s.fill = f; return s }
