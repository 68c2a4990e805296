// Package config reads, validates and defaults the executor's configuration, the
// code_execution, terminal and web sections of $HERMES_HOME/config.yaml.
//
// The file is decoded into a YAML node tree and walked by hand, so every problem is reported
// with the file, the line and the full key path (for example "code_execution.timeout"). Unknown
// keys and wrong types are errors, never silently ignored; an unknown code_execution.mode is
// the one exception: it falls back to "project" and is reported in [Config.Warnings].
//
// # Notes
//
// All problems are returned as [*Error], so a caller can tell a configuration problem apart
// from other failures with errors.As (the command-line front end exits with status 2 on it).
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

	"gopkg.in/yaml.v3"
)

// Mode values accepted for code_execution.mode.
const (
	// ModeProject runs scripts with a native Python in the session's working directory.
	ModeProject = "project"
	// ModeStrict runs scripts in the embedded WASI CPython inside a wazero sandbox.
	ModeStrict = "strict"
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
	// MinDiskLimitMB is the smallest accepted code_execution.disk_limit_mb.
	MinDiskLimitMB = 1
	// MaxDiskLimitMB is the largest accepted code_execution.disk_limit_mb (64 GiB).
	MaxDiskLimitMB = 65536
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
	MaxExtractCharLimit = 1_000_000
)

// FileName is the name of the configuration file inside [HermesHome].
const FileName = "config.yaml"

// Config is the executor's whole configuration.
//
// The zero value is not meaningful; start from [Default], [Load] or [Parse], which fill every
// default.
type Config struct {
	// CodeExecution is the code_execution section. Every field has a default; see
	// [CodeExecution].
	CodeExecution CodeExecution
	// Terminal is the terminal section. Its only setting used here is env_passthrough,
	// which defaults to empty.
	Terminal Terminal
	// Web is the web section: web_search's provider and web_extract's settings.
	Web Web
	// Approvals is the approvals section: how scripts and dangerous commands are approved.
	Approvals Approvals
	// Source is the file the configuration was read from, or "" when it holds only the
	// defaults because no file was found.
	Source string
	// Warnings lists non-fatal problems found while parsing, such as an unknown mode that
	// fell back to "project". It is nil when there were none.
	Warnings []string
}

// CodeExecution is the code_execution section of the configuration file.
type CodeExecution struct {
	// Mode selects where scripts run: "project" (the default) or "strict". It is stored
	// trimmed and lower-case. Any other value falls back to "project" with a warning.
	// YAML key: mode.
	Mode string
	// Timeout is the wall-clock limit of one execution, in seconds. Default 300; it must be
	// between 1 and 86400. YAML key: timeout.
	Timeout int
	// MaxToolCalls is how many tool calls one execution may make. Default 50; it must be
	// 0 or more, and 0 allows no tool calls at all. YAML key: max_tool_calls.
	MaxToolCalls int
	// KernelIdleTimeout is how long, in seconds, an idle session kernel is kept before it
	// is reaped. Default 1800; it must be greater than 0. YAML key: kernel_idle_timeout.
	KernelIdleTimeout int
	// MaxSessionKernels is how many top-level kernels may be alive at once before the least
	// recently used idle one is evicted. Default 4; it must be 1 or more.
	// YAML key: max_session_kernels.
	MaxSessionKernels int
	// MemoryLimitMB caps the guest's linear memory in strict mode, in MiB. Default 512; it
	// must be between 16 and 4096 (the wasm32 maximum). YAML key: memory_limit_mb.
	MemoryLimitMB int
	// DiskLimitMB caps, in MiB, what a strict-mode script may store in its private dir: the
	// total size of its files, net of truncation and removal; a write past it fails with
	// ENOSPC (OSError "No space left on device") in the script. A session kernel keeps one
	// budget across its calls. Default 1024; it must be between 1 and 65536.
	// YAML key: disk_limit_mb.
	DiskLimitMB int
	// WarmPool is how many initialized strict interpreters `serve` keeps ready, so that a new
	// session's first call does not pay interpreter start-up. Default 2; between 0 and 16.
	// YAML key: warm_pool.
	WarmPool int
	// Timezone is an IANA time zone name (for example "Europe/Paris") exported to scripts as
	// TZ. Default "", which sets no TZ. It is validated with time.LoadLocation.
	// YAML key: timezone.
	Timezone string
	// ConfineToolsToWorkdir makes the file tools (read_file, write_file, patch and
	// search_files) refuse any path that resolves, through symlinks, outside the session
	// working directory. Default false. YAML key: confine_tools_to_workdir.
	ConfineToolsToWorkdir bool
}

// Terminal is the terminal section of the configuration file.
type Terminal struct {
	// EnvPassthrough lists exact environment variable names that are passed to scripts even
	// though the environment scrubber would otherwise drop them (for example
	// "HERMES_BASE_URL"). Default empty. Entries must be non-empty and contain no "=";
	// duplicates are removed. Provider credentials managed by the host are never passed,
	// whatever this list says. YAML key: env_passthrough.
	EnvPassthrough []string
}

// Approval modes accepted for approvals.mode.
const (
	// ApprovalsAsk asks the client (serve) or the terminal (run) and blocks when nobody answers.
	ApprovalsAsk = "ask"
	// ApprovalsDeny blocks everything that needs approval.
	ApprovalsDeny = "deny"
	// ApprovalsOff approves everything without asking.
	ApprovalsOff = "off"
)

// Approvals is the approvals section of the configuration file (SPEC §8).
type Approvals struct {
	// Mode is "ask" (the default), "deny" or "off". YAML key: mode.
	Mode string
	// Timeout is how long, in seconds, to wait for an answer before treating the request as
	// denied. Default 120; between 1 and 3600. YAML key: timeout.
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
}

// Error is a configuration problem: a file that cannot be read, invalid YAML, an unknown key,
// a value of the wrong type or out of range.
//
// Callers detect it with errors.As; the command-line front end exits with status 2 on it.
type Error struct {
	// Path is the configuration file, or the source name given to [Parse].
	Path string
	// Line is the 1-based line of the offending key or value, or 0 when not known.
	Line int
	// Key is the full dotted key path (for example "code_execution.timeout"), or "" when
	// the problem is not about one key.
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
			Mode:              ModeProject,
			Timeout:           300,
			MaxToolCalls:      50,
			KernelIdleTimeout: 1800,
			MaxSessionKernels: 4,
			MemoryLimitMB:     512,
			DiskLimitMB:       1024,
			WarmPool:          2,
			Timezone:          "",
		},
		Terminal:  Terminal{EnvPassthrough: nil},
		Web:       Web{Extract: WebExtract{CharLimit: 15000}},
		Approvals: Approvals{Mode: ApprovalsAsk, Timeout: 120},
	}
}

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

// Load reads and validates a configuration file.
//
// With path "", it reads config.yaml in [HermesHome] if that file exists, and otherwise
// returns [Default] with an empty Source. An explicit path that does not exist is an error.
// Every error is an [*Error].
func Load(path string) (Config, error) {
	explicit := path != ""
	if !explicit {
		path = filepath.Join(HermesHome(), FileName)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		msg := fmt.Sprintf("cannot read configuration file: %v", err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = "configuration file does not exist; check the path or omit it to use " +
				filepath.Join(HermesHome(), FileName)
		}
		return Config{}, &Error{Path: path, Msg: msg, Err: err}
	}
	return Parse(data, path)
}

// Parse validates configuration file contents. source names the data in error messages and
// becomes [Config.Source]; it may be "".
//
// An empty document, or one holding only comments, gives the defaults. Keys that are absent
// keep their defaults. Every error is an [*Error].
func Parse(data []byte, source string) (Config, error) {
	cfg := Default()
	cfg.Source = source
	p := parser{source: source, cfg: &cfg}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil
		}
		return Config{}, p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Config{}, &Error{Path: source, Line: extra.Line,
			Msg: "more than one YAML document; keep a single document (remove the \"---\" separator)"}
	} else if !errors.Is(err, io.EOF) {
		return Config{}, p.yamlError(err)
	}

	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return cfg, nil
		}
		root = root.Content[0]
	}
	if err := p.root(root); err != nil {
		return Config{}, err
	}
	if err := p.finishWeb(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// parser walks a decoded node tree into a Config.
type parser struct {
	source string
	cfg    *Config
	lines  webLines
}

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

// field is one known key of a mapping and the function that applies its value.
type field struct {
	name  string
	apply func(key string, v *yaml.Node) error
}

func (p *parser) root(n *yaml.Node) error {
	return p.mapping(n, "", []field{
		{"code_execution", p.codeExecution},
		{"terminal", p.terminal},
		{"web", p.web},
		{"approvals", p.approvals},
	})
}

func (p *parser) approvals(key string, n *yaml.Node) error {
	a := &p.cfg.Approvals
	return p.mapping(n, key, []field{
		{"mode", func(key string, n *yaml.Node) error {
			n = resolveAlias(n)
			modes := []string{ApprovalsAsk, ApprovalsDeny, ApprovalsOff}
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" && !strings.EqualFold(n.Value, "true") {
				a.Mode = ApprovalsOff // YAML reads a bare off/no/false as a boolean.
				return nil
			}
			if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
				return p.errorf(n, key, "%s must be one of %s, got %s", key, strings.Join(modes, ", "), describe(n))
			}
			v := strings.ToLower(strings.TrimSpace(n.Value))
			if !slices.Contains(modes, v) {
				msg := fmt.Sprintf("%s is %q; valid modes: %s", key, n.Value, strings.Join(modes, ", "))
				if s := suggest(v, modes); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				return p.errorf(n, key, "%s", msg)
			}
			a.Mode = v
			return nil
		}},
		{"timeout", p.intField(&a.Timeout, 1, 3600, "seconds")},
	})
}

func (p *parser) web(key string, n *yaml.Node) error {
	w := &p.cfg.Web
	return p.mapping(n, key, []field{
		{"search", func(key string, n *yaml.Node) error {
			return p.mapping(n, key, []field{
				{"provider", p.provider},
				{"url", p.webURL},
				{"api_key_env", p.envName(&w.Search.APIKeyEnv)},
			})
		}},
		{"extract", func(key string, n *yaml.Node) error {
			return p.mapping(n, key, []field{
				{"char_limit", p.intField(&w.Extract.CharLimit, MinExtractCharLimit, MaxExtractCharLimit, "characters")},
			})
		}},
		{"allow_private_networks", p.boolField(&w.AllowPrivateNetworks)},
	})
}

// webLines remembers where web settings were given, for errors about how they combine.
type webLines struct{ provider int }

func (p *parser) provider(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if isNull(n) {
		p.cfg.Web.Search.Provider = ""
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a string (%s), got %s", key, strings.Join(Providers, ", "), describe(n))
	}
	v := strings.ToLower(strings.TrimSpace(n.Value))
	if v != "" && !slices.Contains(Providers, v) {
		msg := fmt.Sprintf("%s is %q; valid providers: %s", key, n.Value, strings.Join(Providers, ", "))
		if s := suggest(v, Providers); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return p.errorf(n, key, "%s", msg)
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
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return p.errorf(n, key, "%s must be true or false, got %s", key, describe(n))
		}
		var v bool
		if err := n.Decode(&v); err != nil {
			return p.errorf(n, key, "%s must be true or false, got %s", key, describe(n))
		}
		*dst = v
		return nil
	}
}

// finishWeb checks how the web settings combine and fills the key variable's default.
func (p *parser) finishWeb() error {
	s := &p.cfg.Web.Search
	if s.Provider == ProviderSearXNG && s.URL == "" {
		return &Error{Path: p.source, Line: p.lines.provider, Key: "web.search.url",
			Msg: "web.search.url is required for the searxng provider: set it to your SearXNG server's base URL, such as \"http://127.0.0.1:8888\""}
	}
	if s.APIKeyEnv == "" {
		s.APIKeyEnv = DefaultAPIKeyEnv[s.Provider]
	}
	return nil
}

func (p *parser) codeExecution(key string, n *yaml.Node) error {
	ce := &p.cfg.CodeExecution
	return p.mapping(n, key, []field{
		{"mode", p.mode},
		{"timeout", p.intField(&ce.Timeout, MinTimeout, MaxTimeout, "seconds")},
		{"max_tool_calls", p.intField(&ce.MaxToolCalls, 0, -1, "")},
		{"kernel_idle_timeout", p.intField(&ce.KernelIdleTimeout, 1, -1, "seconds")},
		{"max_session_kernels", p.intField(&ce.MaxSessionKernels, 1, -1, "")},
		{"memory_limit_mb", p.intField(&ce.MemoryLimitMB, MinMemoryLimitMB, MaxMemoryLimitMB, "MiB")},
		{"disk_limit_mb", p.intField(&ce.DiskLimitMB, MinDiskLimitMB, MaxDiskLimitMB, "MiB")},
		{"warm_pool", p.intField(&ce.WarmPool, 0, 16, "")},
		{"timezone", p.timezone},
		{"confine_tools_to_workdir", p.boolField(&ce.ConfineToolsToWorkdir)},
	})
}

func (p *parser) terminal(key string, n *yaml.Node) error {
	return p.mapping(n, key, []field{
		{"env_passthrough", p.envPassthrough},
	})
}

// mapping checks that n is a mapping (or null, meaning an empty section), rejects unknown and
// duplicate keys, and applies each known key in document order.
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
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolveAlias(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errorf(k, path, "%s has a key that is %s; keys must be plain names (valid keys: %s)",
				describePath(path), describe(k), strings.Join(names, ", "))
		}
		full := joinKey(path, k.Value)
		idx := -1
		for j, name := range names {
			if name == k.Value {
				idx = j
				break
			}
		}
		if idx < 0 {
			msg := fmt.Sprintf("unknown key %q (valid keys: %s)", full, strings.Join(names, ", "))
			if s := suggest(k.Value, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return p.errorf(k, full, "%s", msg)
		}
		if prev, dup := seen[k.Value]; dup {
			return p.errorf(k, full, "duplicate key %q (first defined at line %d); keep only one", full, prev)
		}
		seen[k.Value] = k.Line
		if err := fields[idx].apply(full, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) mode(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a string (%q or %q), got %s", key, ModeProject, ModeStrict, describe(n))
	}
	m := strings.ToLower(strings.TrimSpace(n.Value))
	switch m {
	case ModeProject, ModeStrict:
		p.cfg.CodeExecution.Mode = m
	case "":
		p.cfg.CodeExecution.Mode = ModeProject
	default:
		p.cfg.CodeExecution.Mode = ModeProject
		p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf(
			"%s: line %d: unknown %s %q; falling back to %q (valid modes: %s, %s)",
			sourceName(p.source), n.Line, key, n.Value, ModeProject, ModeProject, ModeStrict))
	}
	return nil
}

// intField returns an apply function that stores an integer in dst after checking it is in
// [lo, hi]; hi < 0 means no upper bound. unit, when set, is named in type errors.
func (p *parser) intField(dst *int, lo, hi int, unit string) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		want := "an integer"
		if unit != "" {
			want = "an integer (" + unit + ")"
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && allDigits(n.Value) {
				return p.errorf(n, key, "%s is %s, which is out of range (%s)", key, n.Value, rangeText(lo, hi))
			}
			return p.errorf(n, key, "%s must be %s, got %s", key, want, describe(n))
		}
		var v int64
		if err := n.Decode(&v); err != nil {
			return p.errorf(n, key, "%s is %s, which is out of range (%s)", key, n.Value, rangeText(lo, hi))
		}
		if v < int64(lo) || (hi >= 0 && v > int64(hi)) {
			return p.errorf(n, key, "%s is %d, which is out of range (%s)", key, v, rangeText(lo, hi))
		}
		*dst = int(v)
		return nil
	}
}

func (p *parser) timezone(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a string naming an IANA time zone (for example \"Europe/Paris\"), got %s", key, describe(n))
	}
	tz := strings.TrimSpace(n.Value)
	if tz == "" {
		p.cfg.CodeExecution.Timezone = ""
		return nil
	}
	if tz == "Local" {
		return p.errorf(n, key, "%s must name an IANA time zone such as \"Europe/Paris\" or \"UTC\", not \"Local\"", key)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return &Error{Path: p.source, Line: n.Line, Key: key, Err: err,
			Msg: fmt.Sprintf("%s: unknown time zone %q; use an IANA name such as \"Europe/Paris\" or \"UTC\"", key, tz)}
	}
	p.cfg.CodeExecution.Timezone = tz
	return nil
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

// suggest returns the valid name closest to k when it is within edit distance 2, else "".
func suggest(k string, names []string) string {
	best, bestD := "", 3
	lk := strings.ToLower(k)
	for _, n := range names {
		if d := editDistance(lk, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, counted in bytes. Long inputs
// are not compared (they cannot be within distance 2 of a short key name anyway).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
