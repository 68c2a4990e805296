package executor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// Skills (docs/behaviour.md §4 rule 1): a skill's SKILL.md declares in its YAML
// frontmatter the environment variables it needs; once registered, they
// pass through the env layer like terminal.env_passthrough, executor-wide
// (Options.SkillEnv, RegisterSkillEnv) or for one session
// (RegisterSessionSkillEnv, Request.SkillEnv).

// SkillFileName is the file that describes a skill, in a skill's directory.
const SkillFileName = "SKILL.md"

// maxSkillFile bounds the SKILL.md that ParseSkillFile reads: a skill's
// instructions are a few KiB, and a wrong path must not make the reader
// hold a whole disk image.
const maxSkillFile = 4 << 20

// envNameRE is Hermes's test of a declared variable name
// (tools/skills_tool.py, _ENV_VAR_NAME_RE); other names are skipped.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// frontmatterEndRE finds the line that closes the frontmatter, searched
// after the opening "---", as Hermes's parse_frontmatter does.
var frontmatterEndRE = regexp.MustCompile(`\n---\s*\n`)

// SkillEnvFromMarkdown returns the environment variable names a SKILL.md
// declares, read the way Hermes reads them (agent/skill_utils.py
// parse_frontmatter, tools/skills_tool.py _get_required_environment_variables):
//
//   - The frontmatter is the YAML between a first line "---" (after an
//     optional UTF-8 byte order mark) and the next line "---"; a document
//     without one declares nothing.
//   - required_environment_variables is a list (or a single mapping) whose
//     items are names ("API_TOKEN") or mappings with a name (or env_var)
//     and optional prompt, help, required_for, optional.
//   - setup.collect_secrets lists mappings with an env_var.
//   - prerequisites.env_vars, the legacy form, is a name or a list of names.
//
// Names are taken in that order, without duplicates (the first wins);
// names that are not identifiers ([A-Za-z_][A-Za-z0-9_]*) are skipped, as
// in Hermes. Optional variables are included: registering one that is
// not set passes nothing. The error reports frontmatter that is not valid
// YAML (Hermes then reads no variables from it).
func SkillEnvFromMarkdown(content string) ([]string, error) {
	fm, err := skillFrontmatter(content)
	if err != nil || fm == nil {
		return nil, err
	}
	var names []string
	add := func(v any) {
		name := strings.TrimSpace(pyStr(v))
		if name != "" && envNameRE.MatchString(name) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, item := range asList(fm["required_environment_variables"]) {
		switch item := item.(type) {
		case string:
			add(item)
		case map[string]any:
			add(firstTruthy(item["name"], item["env_var"]))
		}
	}
	if setup, ok := fm["setup"].(map[string]any); ok {
		for _, item := range asList(setup["collect_secrets"]) {
			if m, ok := item.(map[string]any); ok {
				add(firstTruthy(m["env_var"]))
			}
		}
	}
	if prereqs, ok := fm["prerequisites"].(map[string]any); ok {
		switch v := prereqs["env_vars"].(type) {
		case string:
			add(v)
		case []any:
			for _, item := range v {
				add(item)
			}
		}
	}
	return names, nil
}

// ParseSkillFile reads the variables a skill declares (see
// [SkillEnvFromMarkdown]) from path: a SKILL.md file, or a skill's
// directory holding one.
func ParseSkillFile(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", path, err)
	}
	if fi.IsDir() {
		path = filepath.Join(path, SkillFileName)
		if fi, err = os.Stat(path); err != nil {
			return nil, fmt.Errorf("skill %s: %w (a skill's directory holds its %s)", path, err, SkillFileName)
		}
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("skill %s: not a regular file (give a %s, or the skill's directory)", path, SkillFileName)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSkillFile+1))
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", path, err)
	}
	if len(b) > maxSkillFile {
		return nil, fmt.Errorf("skill %s: larger than %d MiB, which no %s is (check the path)", path, maxSkillFile>>20, SkillFileName)
	}
	names, err := SkillEnvFromMarkdown(string(b))
	if err != nil {
		return nil, fmt.Errorf("skill %s: %w", path, err)
	}
	return names, nil
}

// skillFrontmatter decodes content's frontmatter; nil when it has none or
// it is not a mapping.
func skillFrontmatter(content string) (map[string]any, error) {
	content = strings.TrimPrefix(content, "\ufeff")
	if !strings.HasPrefix(content, "---") {
		return nil, nil
	}
	end := frontmatterEndRE.FindStringIndex(content[3:])
	if end == nil {
		return nil, nil
	}
	var v any
	if err := yaml.Unmarshal([]byte(content[3:3+end[0]]), &v); err != nil {
		return nil, fmt.Errorf("its frontmatter is not valid YAML (%v): fix the block between the --- lines", err)
	}
	m, _ := v.(map[string]any)
	return m, nil
}

// asList is Hermes's _as_dict_list: a mapping is a list of one, a list is
// itself, anything else is empty.
func asList(v any) []any {
	switch v := v.(type) {
	case map[string]any:
		return []any{v}
	case []any:
		return v
	}
	return nil
}

// firstTruthy is Python's `a or b or ""`.
func firstTruthy(vs ...any) any {
	for _, v := range vs {
		if engine.PyTruthy(v) {
			return v
		}
	}
	return ""
}

// pyStr is Python's str() of a decoded YAML scalar, as far as a variable
// name can come of it.
func pyStr(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// callSkillEnv registers the skill variables req names (Request.SkillEnv)
// with its session s, which keeps them for its later calls, and returns
// the names req's call passes through: its session's and its parent's, or,
// without a session (nil s), its own.
func (e *Executor) callSkillEnv(req Request, s *session) []string {
	var ok []string
	if len(req.SkillEnv) > 0 {
		ok, _ = e.screenSkillNames(req.Session, req.SkillEnv)
	}
	if s == nil {
		return ok
	}
	t := e.sessions
	t.mu.Lock()
	added := s.addSkillEnvLocked(ok)
	pass := slices.Clone(s.skillEnv)
	if p := t.byName[req.ParentSession]; p != nil && req.ParentSession != "" {
		pass = append(pass, p.skillEnv...)
	}
	t.mu.Unlock()
	if len(added) > 0 {
		e.log.Log(context.Background(), slog.LevelInfo, "skill environment variables registered", "names", added, "session", req.Session)
	}
	return pass
}

// screenSkillNames splits names a skill registers into those that may pass
// (valid, not host-managed, without duplicates, in order) and the refused
// ones, and logs the refusals as warning events. session is "" for
// executor-wide registrations.
func (e *Executor) screenSkillNames(session string, names []string) (ok, refused []string) {
	var managed []string
	if v := e.cfg.Web.Search.APIKeyEnv; v != "" {
		managed = []string{v}
	}
	credentials := engine.RefusedPassthrough(names, managed...)
	var invalid []string
	for _, n := range names {
		switch {
		case !envName.MatchString(n):
			invalid = append(invalid, n)
		case slices.Contains(credentials, n):
		case slices.Contains(ok, n):
		default:
			ok = append(ok, n)
		}
	}
	var where []any
	if session != "" {
		where = []any{"session", session}
	}
	if len(credentials) > 0 {
		e.log.Log(context.Background(), slog.LevelWarn, "skill environment variable refused",
			append([]any{"names", credentials, "reason", "host-managed credential"}, where...)...)
	}
	if len(invalid) > 0 {
		e.log.Log(context.Background(), slog.LevelWarn, "skill environment variable refused",
			append([]any{"names", invalid, "reason", "invalid name"}, where...)...)
	}
	return ok, append(credentials, invalid...)
}

// envName is what Hermes accepts as a skill's variable name: a shell
// identifier. Others ("A=B", names with a newline) are refused.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// RegisterSessionSkillEnv adds environment variables that a skill declares
// (see [SkillEnvFromMarkdown], [ParseSkillFile]) for one session: they
// pass through the env layer for calls of that session, and of its
// subagents (Request.ParentSession), exactly like the names in
// terminal.env_passthrough, in both modes. Other sessions do not see them;
// [Executor.RegisterSkillEnv] registers names for every session.
// [Executor.CloseSession] forgets them.
//
// As with RegisterSkillEnv, host-managed credentials and invalid names are
// not added: they are returned in refused and logged as a warning event.
// A session kernel that is already running keeps the environment it was
// started with: its scripts see the new variables after a reset
// (Request.Reset), as in Hermes; terminal() commands see them at once. With
// an empty session nothing is registered and err is [ErrNoSession]. It is
// safe for concurrent use.
func (e *Executor) RegisterSessionSkillEnv(session string, names ...string) (refused []string, err error) {
	if session == "" {
		return nil, ErrNoSession
	}
	ok, refused := e.screenSkillNames(session, names)
	t := e.sessions
	t.mu.Lock()
	added := t.sessionLocked(session).addSkillEnvLocked(ok)
	t.mu.Unlock()
	if len(added) > 0 {
		e.log.Log(context.Background(), slog.LevelInfo, "skill environment variables registered", "names", added, "session", session)
	}
	return refused, nil
}

// addSkillEnvLocked adds the names of ok that s does not have yet to its
// skill variables and returns them; the table's lock is held.
func (s *session) addSkillEnvLocked(ok []string) (added []string) {
	for _, n := range ok {
		if !slices.Contains(s.skillEnv, n) && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	s.skillEnv = append(slices.Clone(s.skillEnv), added...)
	return added
}

// SessionSkillEnv returns the variables registered for session with
// [Executor.RegisterSessionSkillEnv] (not those registered executor-wide).
func (e *Executor) SessionSkillEnv(session string) []string {
	t := e.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byName[session]; s != nil {
		return slices.Clone(s.skillEnv)
	}
	return nil
}
