package config

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file holds the terminal section's backend keys: their apply functions, the checks
// their values share with Hermes's TERMINAL_* variables, and the checks that depend on several
// keys.

// backendUse is what an error about terminal.backend offers instead.
const backendUse = `use local, docker, ssh or exec (a command prefix such as ["kubectl","exec","-i","POD","--"])`

// backendReason says why a terminal.backend value that is not in [Backends] (as
// [NormalizeBackend] gives it) is refused.
func backendReason(v string) string {
	switch v {
	case "modal", "daytona", "vercel_sandbox":
		return "its API cannot be reached from here"
	case "singularity", "apptainer":
		return `there is no backend for it here, but its CLI can be the exec backend's prefix (terminal.exec_command: ["apptainer", "exec", "IMAGE"])`
	}
	msg := "it is not a terminal backend"
	if s := suggest(v, append(slices.Clone(Backends), "modal", "daytona", "singularity")); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func (p *parser) backend(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	t := &p.cfg.Terminal
	p.lines.backend = n.Line
	if isNull(n) {
		t.Backend = BackendLocal
		return nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return p.errorf(n, key, "%s must be a string naming a terminal backend (local, docker, ssh or exec), got %s", key, describe(n))
	}
	v, ok := NormalizeBackend(n.Value)
	if !ok {
		return p.errorf(n, key, "%s %q is not available in hermes-wasm-exec: %s; %s; see docs/backends/", key, n.Value, backendReason(v), backendUse)
	}
	t.Backend = v
	return nil
}

// A check validates a trimmed, non-empty value of a string key or of its environment
// variable. It returns the value to store and, when the value is refused, a clause that
// follows "<key> is <value>, which" in the error.
type check func(v string) (value, problem string)

func checkCwd(v string) (string, string) {
	if strings.ContainsRune(v, 0) {
		return "", "contains a NUL byte"
	}
	return v, ""
}

// checkOption refuses what the client program would take for an option or split.
func checkOption(v, program string) string {
	switch {
	case strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "contains spaces or control characters"
	case strings.HasPrefix(v, "-"):
		return fmt.Sprintf("starts with \"-\", which %s would take for an option", program)
	}
	return ""
}

func checkImage(v string) (string, string) { return v, checkOption(v, "docker") }

func checkSSHName(v string) (string, string) { return v, checkOption(v, "ssh") }

func checkEnvName(v string) (string, string) {
	if !envNameRe.MatchString(v) {
		return "", "is not an environment variable name (letters, digits and _, not starting with a digit)"
	}
	return v, ""
}

// checkClientEnvName accepts a variable name that is not a host-managed credential.
func checkClientEnvName(v string) (string, string) {
	if v, problem := checkEnvName(v); problem != "" {
		return v, problem
	}
	if IsManagedCredential(v) {
		return "", "names a credential the host manages, which never reaches a backend's client: remove it from the list"
	}
	return v, ""
}

func (p *parser) clientEnv(key string, n *yaml.Node) error {
	p.lines.clientEnv = resolveAlias(n).Line
	return p.stringList(&p.cfg.Terminal.ClientEnv, "environment variable names", checkClientEnvName)(key, n)
}

// checkVolume accepts what docker -v takes: source:target or source:target:options, with an
// absolute target.
func checkVolume(v string) (string, string) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") || !strings.HasPrefix(parts[1], "/") ||
		strings.ContainsRune(v, 0) {
		return "", "is not source:target or source:target:options with an absolute target path, as docker -v takes it (such as \"/srv/data:/data:ro\")"
	}
	return v, ""
}

// checkAbsPath is checkPath for a path that must be absolute once "~/" is
// expanded.
// checkStorePath is checkAbsPath, with "" for off.
func checkStorePath(v string) (string, string) {
	if strings.TrimSpace(v) == "" {
		return "", ""
	}
	if rest, ok := strings.CutPrefix(strings.TrimSpace(v), "s3://"); ok {
		bucket, _, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return "", "names no bucket; write it as s3://bucket or s3://bucket/prefix"
		}
		return "s3://" + strings.TrimSuffix(rest, "/"), ""
	}
	if strings.Contains(v, "://") {
		return "", "is a URL of a store this executor does not know; write an absolute path of a dir, or s3://bucket/prefix"
	}
	return checkAbsPath(v)
}

// checkCompression is a code_execution.session_store_compression value,
// compared case-insensitively.
func checkCompression(v string) (string, string) {
	for _, c := range Compressions {
		if strings.EqualFold(strings.TrimSpace(v), c) {
			return c, ""
		}
	}
	return "", "must be `fast` or `small`"
}

// checkCheckpoint is a code_execution.session_checkpoint value, compared
// case-insensitively.
func checkCheckpoint(v string) (string, string) {
	for _, c := range Checkpoints {
		if strings.EqualFold(strings.TrimSpace(v), c) {
			return c, ""
		}
	}
	return "", "must be `off` or `every_call`"
}

func checkAbsPath(v string) (string, string) {
	p, problem := checkPath(v)
	if problem != "" {
		return "", problem
	}
	if !filepath.IsAbs(p) {
		return "", "is not an absolute path; write it in full (or as \"~/...\")"
	}
	return filepath.Clean(p), ""
}

// checkPath expands a leading "~/" (or a lone "~") against the user's home.
func checkPath(v string) (string, string) {
	if strings.ContainsRune(v, 0) {
		return "", "contains a NUL byte"
	}
	if v != "~" && !strings.HasPrefix(v, "~/") {
		if strings.HasPrefix(v, "~") {
			return "", "starts with \"~\" but not \"~/\"; write a path in your home as \"~/...\", or an absolute path"
		}
		return v, ""
	}
	home, err := userHomeDir()
	if err != nil || home == "" {
		return "", "starts with \"~\", but the user has no home directory to expand it against; write an absolute path"
	}
	return strings.TrimSuffix(home, "/") + strings.TrimPrefix(v, "~"), ""
}

// stringField returns an apply function for a string key: null or empty (after trimming)
// stores def, any other value is checked and stored trimmed.
func (p *parser) stringField(dst *string, def string, c check) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		if isNull(n) {
			*dst = def
			return nil
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return p.errorf(n, key, "%s must be a string, got %s", key, describe(n))
		}
		v := strings.TrimSpace(n.Value)
		if v == "" {
			*dst = def
			return nil
		}
		v, problem := c(v)
		if problem != "" {
			return p.errorf(n, key, "%s is %q, which %s", key, n.Value, problem)
		}
		*dst = v
		return nil
	}
}

// stringList returns an apply function for a list of strings, each trimmed and checked; what
// names the items in type errors. Null means an empty list.
func (p *parser) stringList(dst *[]string, what string, c check) func(string, *yaml.Node) error {
	return p.list(dst, what, []string{"!!str"}, func(_ int, ik string, item *yaml.Node) (string, error) {
		v, problem := c(strings.TrimSpace(item.Value))
		if problem != "" {
			return "", p.errorf(item, ik, "%s is %q, which %s", ik, item.Value, problem)
		}
		return v, nil
	})
}

// argList returns an apply function for a list of command arguments: each a string or a
// number (taken as written), kept untrimmed; the first must not be empty. Null means an empty
// list.
func (p *parser) argList(dst *[]string, what string) func(string, *yaml.Node) error {
	return p.list(dst, what, []string{"!!str", "!!int", "!!float"}, func(i int, ik string, item *yaml.Node) (string, error) {
		switch {
		case strings.ContainsRune(item.Value, 0):
			return "", p.errorf(item, ik, "%s contains a NUL byte", ik)
		case i == 0 && strings.TrimSpace(item.Value) == "":
			return "", p.errorf(item, ik, "%s is empty; the first item names the program", ik)
		}
		return item.Value, nil
	})
}

// list returns an apply function for a YAML list of scalars whose tags are among tags, each
// item's value given by item (i is its index, ik its key as key[i]). Null means an empty list.
func (p *parser) list(dst *[]string, what string, tags []string, item func(i int, ik string, n *yaml.Node) (string, error)) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		if isNull(n) {
			*dst = nil
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return p.errorf(n, key, "%s must be a list of %s, got %s", key, what, describe(n))
		}
		var out []string
		for i, in := range n.Content {
			in = resolveAlias(in)
			ik := fmt.Sprintf("%s[%d]", key, i)
			if in.Kind != yaml.ScalarNode || !slices.Contains(tags, in.ShortTag()) {
				return p.errorf(in, ik, "%s must be a string, got %s", ik, describe(in))
			}
			v, err := item(i, ik, in)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		*dst = out
		return nil
	}
}

// cpuField returns an apply function for a number of CPUs, 0 or more.
func (p *parser) cpuField(dst *float64) func(string, *yaml.Node) error {
	return func(key string, n *yaml.Node) error {
		n = resolveAlias(n)
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			return p.errorf(n, key, "%s must be a number of CPUs (such as 1 or 0.5; 0 for no limit), got %s", key, describe(n))
		}
		var v float64
		if err := n.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return p.errorf(n, key, "%s is %s, which is out of range (must be 0 or more; 0 means no limit)", key, n.Value)
		}
		*dst = v
		return nil
	}
}

// dockerEnv applies terminal.docker_env: a mapping of names to values, or a list of
// "NAME=value" strings.
func (p *parser) dockerEnv(key string, n *yaml.Node) error {
	n = resolveAlias(n)
	t := &p.cfg.Terminal
	if isNull(n) {
		t.DockerEnv = nil
		return nil
	}
	env := envSetter{p: p, key: key, env: map[string]string{}}
	var err error
	switch n.Kind {
	case yaml.MappingNode:
		err = env.mapping(n)
	case yaml.SequenceNode:
		err = env.list(n)
	default:
		err = p.errorf(n, key, "%s must be a mapping of variable names to values (or a list of \"NAME=value\" strings), got %s", key, describe(n))
	}
	if err != nil {
		return err
	}
	t.DockerEnv = env.env
	if len(env.env) == 0 {
		t.DockerEnv = nil
	}
	return nil
}

// envSetter collects terminal.docker_env's variables, checking each.
type envSetter struct {
	p   *parser
	key string
	env map[string]string
}

// set adds name=value, given at node at as the key path ik.
func (e envSetter) set(at *yaml.Node, ik, name, value string) error {
	if !envNameRe.MatchString(name) {
		return e.p.errorf(at, ik, "%s: %q is not an environment variable name (letters, digits and _, not starting with a digit)", ik, name)
	}
	if strings.ContainsRune(value, 0) {
		return e.p.errorf(at, ik, "%s: the value of %s contains a NUL byte", ik, name)
	}
	if _, dup := e.env[name]; dup {
		return e.p.errorf(at, ik, "%s sets %s twice; keep only one", e.key, name)
	}
	e.env[name] = value
	return nil
}

// mapping adds the variables of a mapping of names to values.
func (e envSetter) mapping(n *yaml.Node) error {
	pairs, err := e.p.pairs(n, e.key)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := resolveAlias(pairs[i]), resolveAlias(pairs[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return e.p.errorf(k, e.key, "%s has a key that is %s; keys must be variable names", e.key, describe(k))
		}
		ik := joinKey(e.key, k.Value)
		if v.Kind != yaml.ScalarNode || !slices.Contains([]string{"!!str", "!!int", "!!float"}, v.ShortTag()) {
			return e.p.errorf(v, ik, "%s must be a string or a number, got %s; quote it (for example \"true\")", ik, describe(v))
		}
		if err := e.set(k, ik, k.Value, v.Value); err != nil {
			return err
		}
	}
	return nil
}

// list adds the variables of a list of "NAME=value" strings.
func (e envSetter) list(n *yaml.Node) error {
	for i, item := range n.Content {
		item = resolveAlias(item)
		ik := fmt.Sprintf("%s[%d]", e.key, i)
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
			return e.p.errorf(item, ik, "%s must be a \"NAME=value\" string, got %s", ik, describe(item))
		}
		name, value, ok := strings.Cut(item.Value, "=")
		if !ok {
			return e.p.errorf(item, ik, "%s is %q, which has no \"=\"; write NAME=value", ik, item.Value)
		}
		if err := e.set(item, ik, name, value); err != nil {
			return err
		}
	}
	return nil
}

// terminalEnv applies Hermes's TERMINAL_* variables over the file's terminal keys. A blank
// variable is unset; an invalid one is an error naming it.
func (p *parser) terminalEnv(getenv func(string) string) error {
	for _, e := range terminalEnv {
		raw := getenv(e.name)
		v := strings.TrimSpace(raw)
		if v == "" {
			continue
		}
		applied, err := p.terminalVar(e.name, e.key, raw, v)
		if err != nil {
			return err
		}
		if !applied {
			continue
		}
		for i, k := range p.cfg.Used {
			if k.Path == "terminal."+e.key {
				p.cfg.Used[i].Note = joinNote(k.Note, "overridden by "+e.name+"="+v)
			}
		}
	}
	return nil
}

// terminalVar applies the variable name, set to raw (v trimmed), over terminal.key; applied
// is false when it is ignored.
func (p *parser) terminalVar(name, key, raw, v string) (applied bool, err error) {
	t := &p.cfg.Terminal
	fail := func(problem string) error {
		return &Error{Path: p.source, Key: name, Msg: fmt.Sprintf(
			"environment variable %s is %q, which %s; fix it, or unset it to use terminal.%s of the config file", name, raw, problem, key)}
	}
	var c check
	var dst *string
	switch key {
	case "backend":
		b, ok := NormalizeBackend(v)
		if !ok {
			return false, &Error{Path: p.source, Key: name, Msg: fmt.Sprintf(
				"environment variable %s is %q, a terminal backend not available in hermes-wasm-exec: %s; %s, or unset it to use terminal.backend of the config file; see docs/backends/", name, raw, backendReason(b), backendUse)}
		}
		t.Backend, p.backendEnv = b, true
		return true, nil
	case "ssh_port":
		port, err := strconv.Atoi(v)
		if err != nil || port < 1 || port > 65535 {
			return false, fail("is not a port number (between 1 and 65535)")
		}
		t.SSHPort = port
		return true, nil
	case "cwd":
		if t.Backend == BackendDocker && hostPath(v) {
			// Hermes sets TERMINAL_CWD to its own working dir; a host path means nothing
			// in a container, and Hermes ignores it too.
			p.cfg.Notes = append(p.cfg.Notes, fmt.Sprintf("%s=%s is a host path, which a container cannot use: ignored; docker commands run in %s", name, v, t.RemoteCwd()))
			return false, nil
		}
		c, dst = checkCwd, &t.Cwd
	case "docker_image":
		c, dst = checkImage, &t.DockerImage
	case "ssh_host":
		c, dst = checkSSHName, &t.SSHHost
	case "ssh_user":
		c, dst = checkSSHName, &t.SSHUser
	case "ssh_key":
		c, dst = checkPath, &t.SSHKey
	}
	value, problem := c(v)
	if problem != "" {
		return false, fail(problem)
	}
	*dst = value
	return true, nil
}

// hostPath reports whether a working dir is one a container cannot use: relative, or under a
// host's home directories (Hermes's test).
func hostPath(v string) bool {
	return !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "/home/") || strings.HasPrefix(v, "/Users/")
}

// finishTerminal checks what the selected backend needs, and that terminal.client_env does
// not name the web search key's variable.
func (p *parser) finishTerminal() error {
	t := &p.cfg.Terminal
	if err := p.checkClientEnvKey(); err != nil {
		return err
	}
	what := fmt.Sprintf("terminal.backend is %q", t.Backend)
	if p.backendEnv {
		what += " (from TERMINAL_ENV)"
	}
	switch t.Backend {
	case BackendSSH:
		if key, missing := sshMissing(*t); key != "" {
			return &Error{Path: p.source, Line: p.lines.backend, Key: key, Msg: fmt.Sprintf(
				"%s but terminal.ssh_host and terminal.ssh_user are not both set (%s); set both in the terminal section, or TERMINAL_SSH_HOST and TERMINAL_SSH_USER in the environment", what, missing)}
		}
	case BackendExec:
		if len(t.ExecCommand) == 0 {
			return &Error{Path: p.source, Line: p.lines.backend, Key: "terminal.exec_command", Msg: fmt.Sprintf(
				"%s but terminal.exec_command is not set: set it to the command prefix that runs a command in the target, such as [\"kubectl\", \"exec\", \"-i\", \"POD\", \"--\"]", what)}
		}
	case BackendDocker:
		if cwd := t.Cwd; cwd != "" && cwd != "." && !strings.HasPrefix(cwd, "/") {
			for _, k := range p.cfg.Used {
				if k.Path == "terminal.cwd" {
					p.warnf(k.Line, "terminal.cwd %q is not an absolute path, which a container cannot use; docker commands run in %s (set an absolute path such as \"/workspace\")", cwd, DefaultDockerCwd)
				}
			}
		}
	}
	return nil
}

// checkClientEnvKey refuses a terminal.client_env that names web.search.api_key_env's
// variable.
func (p *parser) checkClientEnvKey() error {
	k := p.cfg.Web.Search.APIKeyEnv
	if k == "" {
		return nil
	}
	for i, n := range p.cfg.Terminal.ClientEnv {
		if strings.EqualFold(n, k) {
			key := fmt.Sprintf("terminal.client_env[%d]", i)
			return &Error{Path: p.source, Line: p.lines.clientEnv, Key: key, Msg: fmt.Sprintf(
				"%s is %q, the variable web.search.api_key_env names: a credential the host manages, which never reaches a backend's client: remove it from the list", key, n)}
		}
	}
	return nil
}

// sshMissing is, when t lacks the ssh backend's host or user, the key an error names and
// what it says is missing; key is "" when both are set.
func sshMissing(t Terminal) (key, missing string) {
	switch {
	case t.SSHHost == "" && t.SSHUser == "":
		return "terminal.ssh_host", "neither is"
	case t.SSHHost == "":
		return "terminal.ssh_host", "ssh_host is missing"
	case t.SSHUser == "":
		return "terminal.ssh_user", "ssh_user is missing"
	}
	return "", ""
}

// listText formats a list for [Config.Used].
func listText(items []string) string { return "[" + strings.Join(items, ", ") + "]" }
