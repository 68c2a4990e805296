package hostfuncs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// safetyEnv is a fresh user home, Hermes home and working dir, with HOME
// pointing at the temp home for the test.
type safetyEnv struct {
	home, hermes, workdir string
}

func newSafetyEnv(t *testing.T) safetyEnv {
	t.Helper()
	eval := func(d string) string {
		d, err := filepath.EvalSymlinks(d)
		require.NoError(t, err)
		return d
	}
	e := safetyEnv{home: eval(t.TempDir()), hermes: eval(t.TempDir()), workdir: eval(t.TempDir())}
	t.Setenv("HOME", e.home)
	if runtime.GOOS == "windows" {
		t.Setenv("USERPROFILE", e.home)
	}
	return e
}

// tools returns tools over the env's working dir, changed by opt.
func (e safetyEnv) tools(t *testing.T, opt func(*Options)) *Tools {
	t.Helper()
	o := Options{Workdir: e.workdir, HermesHome: e.hermes}
	if opt != nil {
		opt(&o)
	}
	tl, err := New(o)
	require.NoError(t, err)
	return tl
}

func protectedMsg(path string) string {
	return "Write denied: '" + path + "' is a protected system/credential file."
}

// TestWriteFileRefusesProtectedPaths writes every protected file and into
// every protected directory for real (under a temp HOME and HERMES_HOME):
// each is refused with Hermes's message and nothing is created.
func TestWriteFileRefusesProtectedPaths(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	paths := []string{
		"~/.ssh/authorized_keys", "~/.ssh/id_rsa", "~/.ssh/id_ed25519",
		"~/.netrc", "~/.pgpass", "~/.npmrc", "~/.pypirc", "~/.git-credentials",
		// Anything under the protected directories, ~/.ssh/config included
		// (Hermes asks for approval there, which a script cannot).
		"~/.ssh/config", "~/.ssh/new_key", "~/.aws/credentials", "~/.gnupg/pubring.kbx",
		"~/.kube/config", "~/.docker/config.json", "~/.azure/accessTokens.json",
		"~/.config/gh/hosts.yml", "~/.config/gcloud/credentials.db",
		// Hermes's stores in the configured home and in the default root.
		filepath.Join(e.hermes, ".env"), filepath.Join(e.hermes, ".anthropic_oauth.json"),
		filepath.Join(e.hermes, "cache", "bws_cache.enc.json"), filepath.Join(e.hermes, "state.db"),
		filepath.Join(e.hermes, "sessions", "s1.json"), filepath.Join(e.hermes, "mcp-tokens", "gh.json"),
		filepath.Join(e.hermes, "pairing", "code"), "~/.hermes/.env",
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "ssh-ed25519 AAAA attacker\n"})
			// Like Hermes, the refusal names the resolved path.
			assert.Equal(t, map[string]any{"error": protectedMsg(expandHome(p))}, res)
			assert.NoFileExists(t, expandHome(p))
		})
	}
	// Nothing at all was created, not even a parent directory.
	for _, d := range []string{e.home, e.hermes} {
		left, err := os.ReadDir(d)
		require.NoError(t, err)
		assert.Empty(t, left, "write_file created entries in %s", d)
	}
}

// TestSystemPathsRefused checks the system files and directories without
// writing (the tests may run as root): the check alone decides.
func TestSystemPathsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no /etc, /boot or docker.sock: the POSIX system paths are protected on POSIX hosts only (buildPolicy); the home's credential files, which Windows shares, are tested by TestWriteFileRefusesProtectedPaths")
	}
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	for _, p := range []string{"/etc/sudoers", "/etc/passwd", "/etc/shadow", "/etc/sudoers.d/90-agent", "/etc/systemd/system/evil.service"} {
		assert.Equal(t, protectedMsg(realOrSelf(p)), tl.checkWrite("Write", p, tl.resolve(p), false), p)
	}
	// Hermes's wider system list, with its own message.
	for _, p := range []string{"/etc/hosts", "/boot/grub/grub.cfg", "/usr/lib/systemd/system/x.service", "/run/docker.sock"} {
		assert.Equal(t, "Refusing to write to sensitive system path: "+p+"\nUse the terminal tool with sudo if you need to modify system files.",
			tl.checkWrite("Write", p, tl.resolve(p), false), p)
	}
	// The Hermes config holds approvals.mode: a script must not rewrite it.
	cfg := filepath.Join(e.hermes, "config.yaml")
	res := callJSON(t, tl, "write_file", map[string]any{"path": cfg, "content": "approvals: {mode: \"off\"}\n"})
	assert.Contains(t, res["error"], "Refusing to write to Hermes config file: "+cfg)
	assert.NoFileExists(t, cfg)
}

// TestWriteThroughSymlinksRefused reaches protected files through links:
// a link to the protected directory, a dangling link to a protected file,
// and a linked parent directory.
func TestWriteThroughSymlinksRefused(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	require.NoError(t, os.Mkdir(filepath.Join(e.home, ".ssh"), 0o700))
	symlink(t, filepath.Join(e.home, ".ssh"), filepath.Join(e.workdir, "keys"))
	symlink(t, filepath.Join(e.home, ".ssh", "authorized_keys"), filepath.Join(e.workdir, "notes.txt"))
	symlink(t, e.home, filepath.Join(e.workdir, "h"))
	symlink(t, "../"+filepath.Base(e.hermes), filepath.Join(e.workdir, "rel"))
	for p, real := range map[string]string{
		"keys/authorized_keys": filepath.Join(e.home, ".ssh", "authorized_keys"),
		"notes.txt":            filepath.Join(e.home, ".ssh", "authorized_keys"), // dangling
		"h/.netrc":             filepath.Join(e.home, ".netrc"),
		"h/.aws/credentials":   filepath.Join(e.home, ".aws", "credentials"),
		// A relative link into HERMES_HOME (both are temp dirs side by side).
		"rel/.env": filepath.Join(e.hermes, ".env"),
	} {
		res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "x"})
		assert.Equal(t, map[string]any{"error": protectedMsg(real)}, res, p)
	}
	assert.NoFileExists(t, filepath.Join(e.home, ".ssh", "authorized_keys"))
	assert.NoFileExists(t, filepath.Join(e.home, ".netrc"))
	assert.NoDirExists(t, filepath.Join(e.home, ".aws"))

	// patch follows the same rule.
	require.NoError(t, os.WriteFile(filepath.Join(e.home, ".ssh", "id_rsa"), []byte("KEY\n"), 0o600))
	res := callJSON(t, tl, "patch", map[string]any{"path": "keys/id_rsa", "old_string": "KEY", "new_string": "MINE"})
	assert.Equal(t, map[string]any{"success": false, "error": protectedMsg(filepath.Join(e.home, ".ssh", "id_rsa"))}, res)
	got, err := os.ReadFile(filepath.Join(e.home, ".ssh", "id_rsa"))
	require.NoError(t, err)
	assert.Equal(t, "KEY\n", string(got))
}

// TestPatchV4ARefusesProtectedPaths applies V4A patches from the home
// directory: every path a patch touches is checked (added, updated,
// deleted, both ends of a move) with Hermes's verb for the operation and the
// path as written in the patch, and nothing changes.
func TestPatchV4ARefusesProtectedPaths(t *testing.T) {
	e := newSafetyEnv(t)
	tl, err := New(Options{Workdir: e.home, HermesHome: e.hermes})
	require.NoError(t, err)
	writeTestFile(t, e.home, "notes.txt", "one\n")
	writeTestFile(t, e.home, ".ssh/id_rsa", "KEY\n")
	writeTestFile(t, e.home, ".aws/config", "[default]\n")
	tests := []struct{ name, patch, denied string }{
		{"add", "*** Begin Patch\n*** Add File: .ssh/authorized_keys\n+ssh-ed25519 AAAA attacker\n*** End Patch", "Write denied: '.ssh/authorized_keys'"},
		{"delete", "*** Begin Patch\n*** Delete File: .ssh/id_rsa\n*** End Patch", "Delete denied: '.ssh/id_rsa'"},
		{"update", "*** Begin Patch\n*** Update File: .aws/config\n@@\n-[default]\n+[evil]\n*** End Patch", "Write denied: '.aws/config'"},
		{"move into", "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: .netrc\n*** End Patch", "Move denied: '.netrc'"},
		{"move out of", "*** Begin Patch\n*** Update File: .ssh/id_rsa\n*** Move to: stolen.txt\n*** End Patch", "Move denied: '.ssh/id_rsa'"},
		{"second file", "*** Begin Patch\n*** Add File: fine.txt\n+ok\n*** Add File: .git-credentials\n+https://x:y@host\n*** End Patch", "Write denied: '.git-credentials'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": tc.patch})
			assert.Equal(t, map[string]any{"success": false, "error": tc.denied + " is a protected system/credential file."}, res)
		})
	}
	for _, p := range []string{".ssh/authorized_keys", ".netrc", "stolen.txt", "fine.txt", ".git-credentials"} {
		assert.NoFileExists(t, filepath.Join(e.home, p))
	}
	for p, want := range map[string]string{"notes.txt": "one\n", ".ssh/id_rsa": "KEY\n", ".aws/config": "[default]\n"} {
		got, err := os.ReadFile(filepath.Join(e.home, p))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), p)
	}
}

// TestWriteSafeRoot confines writes to HERMES_WRITE_SAFE_ROOT's entries.
func TestWriteSafeRoot(t *testing.T) {
	e := newSafetyEnv(t)
	rootA := filepath.Join(e.workdir, "a")
	rootB := filepath.Join(e.workdir, "b")
	roots := rootB + string(os.PathListSeparator) + rootA + string(os.PathListSeparator)
	tl := e.tools(t, func(o *Options) { o.WriteSafeRoot = roots })
	wantRoots := rootA + string(os.PathListSeparator) + rootB // sorted, empty entries dropped

	for _, p := range []string{"a/x.txt", "b/deep/y.txt", filepath.Join(rootA, "z.txt")} {
		res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "ok"})
		assert.NotContains(t, res, "error", p)
	}
	writeTestFile(t, e.workdir, "top.txt", "old")
	outsideMsg := func(real string) string {
		return "Write denied: '" + real + "' is outside HERMES_WRITE_SAFE_ROOT (" + wantRoots +
			"). Unset the variable or add this path's directory prefix."
	}
	for p, real := range map[string]string{
		"top.txt":  filepath.Join(e.workdir, "top.txt"),
		"ab/x.txt": filepath.Join(e.workdir, "ab", "x.txt"),
		"~/x.txt":  filepath.Join(e.home, "x.txt"),
	} {
		res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "new"})
		assert.Equal(t, outsideMsg(real), res["error"], p)
	}
	t.Run("through a link", func(t *testing.T) {
		symlink(t, e.workdir, filepath.Join(rootA, "up"))
		res := callJSON(t, tl, "write_file", map[string]any{"path": "a/up/top.txt", "content": "new"})
		assert.Equal(t, outsideMsg(filepath.Join(e.workdir, "top.txt")), res["error"])
	})
	res := callJSON(t, tl, "patch", map[string]any{"path": "top.txt", "old_string": "old", "new_string": "new"})
	assert.Contains(t, res["error"], "is outside HERMES_WRITE_SAFE_ROOT")
	got, err := os.ReadFile(filepath.Join(e.workdir, "top.txt"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	assert.NoFileExists(t, filepath.Join(e.workdir, "ab", "x.txt"))
	assert.NoFileExists(t, filepath.Join(e.home, "x.txt"))

	// Reads are not confined by it.
	res = callJSON(t, tl, "read_file", map[string]any{"path": "top.txt"})
	assert.Equal(t, "1|old", res["content"])
}

// TestReadFileRefusesSecrets refuses project env files anywhere and the
// Hermes credential stores, saying why and what to read instead;
// .env.example and other look-alikes stay readable.
func TestReadFileRefusesSecrets(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	envMsg := " is a secret-bearing environment file and cannot be read to prevent credential leakage. " +
		"If you need to check the file structure, read .env.example instead. " +
		"(Defense-in-depth — not a security boundary; the terminal tool can still bypass.)"
	storeMsg := " is a Hermes credential store and cannot be read directly. Provider tools consume these " +
		"credentials through internal channels. (Defense-in-depth — not a security boundary; the terminal tool can still bypass.)"
	for _, name := range []string{".env", ".env.local", ".env.development", ".env.production", ".env.test", ".env.staging", ".envrc", "sub/dir/.env", ".ENV",
		// Beyond Hermes's list, the rest of the family.
		".env.prod", ".env.dev", ".env.backup", "prod.env", ".env.local.bak", ".ENV.Prod", "Prod.ENV", ".env~", "sub/staging.env", ".env."} {
		if runtime.GOOS == "windows" && strings.HasSuffix(name, ".") {
			continue // Win32 drops a trailing dot: ".env." is .env there, refused above
		}
		writeTestFile(t, e.workdir, name, "API_KEY=sk-secret\n")
		res := callJSON(t, tl, "read_file", map[string]any{"path": name})
		assert.Equal(t, map[string]any{"error": "Access denied: " + filepath.Join(e.workdir, filepath.FromSlash(name)) + envMsg}, res, name)
	}
	// A missing .env is refused the same way: the answer does not say
	// whether it exists.
	res := callJSON(t, tl, "read_file", map[string]any{"path": "other/.env"})
	assert.Equal(t, "Access denied: "+filepath.Join(e.workdir, "other", ".env")+envMsg, res["error"])

	for _, name := range []string{".env.example", ".env.sample", ".env.template", ".env.dist", ".env.local.example", ".env.production.sample",
		"example.env", ".ENV.EXAMPLE", "env", ".environment", "dotenv.txt", "environment.ts", ".envrc.example", "env.sh"} {
		writeTestFile(t, e.workdir, name, "API_KEY=\n")
		res := callJSON(t, tl, "read_file", map[string]any{"path": name})
		assert.Equal(t, "1|API_KEY=", res["content"], name)
	}

	t.Run("links count by either name", func(t *testing.T) {
		symlink(t, filepath.Join(e.workdir, ".env"), filepath.Join(e.workdir, "settings.txt"))
		require.NoError(t, os.Mkdir(filepath.Join(e.workdir, "linked"), 0o755))
		symlink(t, filepath.Join(e.workdir, "env"), filepath.Join(e.workdir, "linked", ".env"))
		for _, name := range []string{"settings.txt", "linked/.env"} {
			res := callJSON(t, tl, "read_file", map[string]any{"path": name})
			assert.Contains(t, res["error"], envMsg, name)
		}
	})

	for _, name := range []string{"auth.json", "auth.lock", ".anthropic_oauth.json", ".env", "webhook_subscriptions.json", "auth/google_oauth.json", "cache/bws_cache.json"} {
		p := writeTestFile(t, e.hermes, name, "{\"token\": \"secret\"}\n")
		res := callJSON(t, tl, "read_file", map[string]any{"path": p})
		assert.Equal(t, map[string]any{"error": "Access denied: " + p + storeMsg}, res, name)
	}
	tok := writeTestFile(t, e.hermes, "mcp-tokens/github.json", "{}")
	res = callJSON(t, tl, "read_file", map[string]any{"path": tok})
	assert.Equal(t, "Access denied: "+tok+" is a Hermes MCP token file and cannot be read directly. "+
		"(Defense-in-depth — not a security boundary; the terminal tool can still bypass.)", res["error"])
	cookies := writeTestFile(t, e.hermes, "browser-profile/Default/Cookies", "x")
	res = callJSON(t, tl, "read_file", map[string]any{"path": cookies})
	assert.Contains(t, res["error"], "is inside the Hermes real-profile browser snapshot")
	hub := writeTestFile(t, e.hermes, "skills/.hub/index-cache/x.json", "{}")
	res = callJSON(t, tl, "read_file", map[string]any{"path": hub})
	assert.Equal(t, "Access denied: "+hub+" is an internal Hermes cache file and cannot be read directly to prevent prompt injection. "+
		"Use the skills_list or skill_view tools instead.", res["error"])
	// The stores of the default root (~/.hermes) are protected too.
	res = callJSON(t, tl, "read_file", map[string]any{"path": "~/.hermes/auth.json"})
	assert.Contains(t, res["error"], storeMsg)

	// Other files in the Hermes home stay readable.
	p := writeTestFile(t, e.hermes, "skills/notes/SKILL.md", "# notes\n")
	res = callJSON(t, tl, "read_file", map[string]any{"path": p})
	assert.Equal(t, "1|# notes", res["content"])
}

// TestIsProjectEnv: Hermes's names, the rest of the .env family, and the
// templates that stay readable, in any case.
func TestIsProjectEnv(t *testing.T) {
	for _, name := range []string{".env", ".envrc", ".env.local", ".env.production", ".env.prod", ".env.dev", ".env.backup",
		".env.local.bak", ".env.", ".env.swp", ".env~", ".envrc~", "prod.env", "a.b.env", ".ENV.PROD", "PROD.ENV", "x.env~"} {
		assert.True(t, isProjectEnv(name), name)
	}
	for _, name := range []string{".env.example", ".env.sample", ".env.template", ".env.dist", ".env.local.example",
		".env.staging.sample", "example.env", "prod.sample.env", ".ENV.EXAMPLE", ".env.example~", "env", ".environment", ".envrc.local",
		"env.prod", "dotenv", "envs", ".envs", "prod.envx", "environment.ts", ""} {
		assert.False(t, isProjectEnv(name), name)
	}
}

// TestSearchFilesSkipsSecrets neither lists nor greps what read_file
// refuses, and says how many files it left out.
func TestSearchFilesSkipsSecrets(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	writeTestFile(t, e.hermes, "auth.json", "{\"token\": \"sk-secret\"}\n")
	writeTestFile(t, e.hermes, "mcp-tokens/gh.json", "{\"token\": \"gho-secret\"}\n")
	writeTestFile(t, e.hermes, "notes.txt", "token rotation is monthly\n")

	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "token", "path": e.hermes})
	require.NotContains(t, res, "error")
	assert.Equal(t, float64(1), res["total_count"])
	matches := res["matches"].([]any)
	require.Len(t, matches, 1)
	assert.Equal(t, "token rotation is monthly", matches[0].(map[string]any)["content"])
	assert.Equal(t, "2 file(s) omitted because they are credential, token, cache, or secret-bearing environment files.", res["_omitted"])

	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "*.json", "target": "files", "path": e.hermes})
	assert.Equal(t, []any{}, res["files"])

	writeTestFile(t, e.workdir, ".env", "API_KEY=sk-secret\n")
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-", "path": ".env"})
	assert.Contains(t, res["error"], "is a secret-bearing environment file")
	// The rest of the env family: a visible prod.env is neither listed nor
	// searched; a hidden .env.prod is refused as a search root.
	writeTestFile(t, e.workdir, "config/prod.env", "API_KEY=sk-secret\n")
	writeTestFile(t, e.workdir, "config/.env.prod", "API_KEY=sk-secret\n")
	writeTestFile(t, e.workdir, "config/app.env.example", "API_KEY=sk-example\n")
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-", "path": "config"})
	assert.Equal(t, []any{map[string]any{"path": filepath.Join("config", "app.env.example"), "line": float64(1), "content": "API_KEY=sk-example"}}, res["matches"], res)
	assert.Equal(t, "1 file(s) omitted because they are credential, token, cache, or secret-bearing environment files.", res["_omitted"])
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "*env*", "target": "files", "path": "config"})
	assert.Equal(t, []any{filepath.Join("config", "app.env.example")}, res["files"], res)
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-", "path": "config/.env.prod"})
	assert.Contains(t, res["error"], "is a secret-bearing environment file")
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "sk-", "path": "config/PROD.ENV"})
	if foldCase {
		assert.Contains(t, res["error"], "is a secret-bearing environment file")
	}
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": ".", "path": filepath.Join(e.hermes, "mcp-tokens")})
	assert.Contains(t, res["error"], "is the Hermes MCP token directory")

	// A search with nothing to hide carries no _omitted key.
	res = callJSON(t, tl, "search_files", map[string]any{"pattern": "token", "path": filepath.Join(e.hermes, "notes.txt")})
	assert.NotContains(t, res, "_omitted")
	assert.Equal(t, float64(1), res["total_count"])
}

// TestConfineToolsToWorkdir: with the option on, the file tools refuse
// paths that resolve outside the working dir, through symlinks too; off,
// they do not.
func TestConfineToolsToWorkdir(t *testing.T) {
	e := newSafetyEnv(t)
	outside := writeTestFile(t, e.home, "outside.txt", "out\n")
	writeTestFile(t, e.workdir, "inside.txt", "in\n")
	if symlinksUnavailable() == "" {
		symlink(t, e.home, filepath.Join(e.workdir, "escape"))
	}

	calls := []struct {
		tool string
		args map[string]any
		verb string
		path string
		link bool // through the link "escape"
	}{
		{"read_file", map[string]any{"path": outside}, "Read", outside, false},
		{"read_file", map[string]any{"path": "escape/outside.txt"}, "Read", "escape/outside.txt", true},
		{"write_file", map[string]any{"path": "~/new.txt", "content": "x"}, "Write", "~/new.txt", false},
		{"write_file", map[string]any{"path": "escape/new.txt", "content": "x"}, "Write", "escape/new.txt", true},
		{"patch", map[string]any{"path": outside, "old_string": "out", "new_string": "in"}, "Write", outside, false},
		{"search_files", map[string]any{"pattern": "out", "path": "escape"}, "Search", "escape", true},
		{"search_files", map[string]any{"pattern": "out", "path": ".."}, "Search", "..", false},
	}
	on := e.tools(t, func(o *Options) { o.ConfineToWorkdir = true })
	off := e.tools(t, nil)
	for _, c := range calls {
		t.Run(c.tool+" "+c.path, func(t *testing.T) {
			if c.link {
				skipWithoutSymlinks(t)
			}
			res := callJSON(t, on, c.tool, c.args)
			msg, _ := res["error"].(string)
			assert.True(t, strings.HasPrefix(msg, c.verb+" denied: '"+c.path+"' resolves to "), msg)
			assert.Contains(t, msg, "outside the session working directory "+e.workdir)
			assert.Contains(t, msg, "code_execution.confine_tools_to_workdir: false")

			res = callJSON(t, off, c.tool, c.args)
			assert.NotContains(t, res, "error")
		})
	}
	// Inside the working dir everything works with confinement on.
	res := callJSON(t, on, "read_file", map[string]any{"path": "inside.txt"})
	assert.Equal(t, "1|in", res["content"])
	res = callJSON(t, on, "write_file", map[string]any{"path": "sub/new.txt", "content": "x"})
	assert.NotContains(t, res, "error")
	res = callJSON(t, on, "patch", map[string]any{"path": "inside.txt", "old_string": "in", "new_string": "IN"})
	assert.Equal(t, true, res["success"])
	res = callJSON(t, on, "search_files", map[string]any{"pattern": "IN"})
	assert.Equal(t, float64(1), res["total_count"])
}

// TestTildeIsTheUserHome: "~" in a tool path is the user's home, as in
// Hermes; a name that merely starts with "~" is not.
func TestTildeIsTheUserHome(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	res := callJSON(t, tl, "write_file", map[string]any{"path": "~/notes/today.md", "content": "hi\n"})
	require.NotContains(t, res, "error")
	assert.Equal(t, filepath.Join(e.home, "notes", "today.md"), res["resolved_path"])
	res = callJSON(t, tl, "write_file", map[string]any{"path": "~backup.txt", "content": "b"})
	require.NotContains(t, res, "error")
	assert.Equal(t, filepath.Join(e.workdir, "~backup.txt"), res["resolved_path"])
	res = callJSON(t, tl, "read_file", map[string]any{"path": "~/notes/today.md"})
	assert.Equal(t, "1|hi", res["content"])
}

func TestRealPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755))
	symlink(t, filepath.Join(dir, "real"), filepath.Join(dir, "abs"))
	symlink(t, "real/sub", filepath.Join(dir, "rel"))
	symlink(t, "../../real", filepath.Join(dir, "real", "sub", "up"))
	symlink(t, filepath.Join(dir, "nowhere", "file"), filepath.Join(dir, "dangling"))
	symlink(t, "loop2", filepath.Join(dir, "loop1"))
	symlink(t, "loop1", filepath.Join(dir, "loop2"))
	tests := map[string]string{
		"real/sub":       "real/sub",
		"abs/sub/x":      "real/sub/x",
		"rel/new/deeper": "real/sub/new/deeper",
		"rel/up/sub":     "real/sub",
		"dangling":       "nowhere/file",
	}
	for in, want := range tests {
		got, err := realPath(filepath.Join(dir, filepath.FromSlash(in)))
		require.NoError(t, err, in)
		assert.Equal(t, filepath.Join(dir, filepath.FromSlash(want)), got, in)
	}
	_, err = realPath(filepath.Join(dir, "loop1", "x"))
	assert.Error(t, err)
	tl, err := New(Options{Workdir: dir})
	require.NoError(t, err)
	res := callJSON(t, tl, "write_file", map[string]any{"path": "loop1", "content": "x"})
	assert.Contains(t, res["error"], "cannot be resolved")
	assert.Contains(t, res["error"], "Fix or remove the symlink loop")
}

func cacheMsg(verb, path, dir string) string {
	return verb + " denied: '" + path + "' is in the executor's cache (" + dir + "), which the file tools never write: " +
		"the executor loads compiled code from it. Write the file somewhere else."
}

// TestWriteRefusesExecutorCache: write_file and patch (every V4A path)
// never write under a Hermes home's cache/ or the configured wasm cache
// dir, reached directly, through a symlink, or through a symlinked cache
// dir; existing entries are left as they were.
func TestWriteRefusesExecutorCache(t *testing.T) {
	e := newSafetyEnv(t)
	wasmReal := filepath.Join(t.TempDir(), "wasm")
	wasmLink := filepath.Join(e.workdir, "wasm-link")
	require.NoError(t, os.MkdirAll(wasmReal, 0o700))
	wasmReal, err := filepath.EvalSymlinks(wasmReal)
	require.NoError(t, err)
	links := symlinksUnavailable() == ""
	// The option names the cache dir through a link: its target is
	// protected. Without links it names the dir itself.
	wasmOpt := wasmReal
	if links {
		symlink(t, wasmReal, wasmLink)
		wasmOpt = wasmLink
	}
	tl := e.tools(t, func(o *Options) { o.WasmCacheDir = wasmOpt })
	compiled := writeTestFile(t, wasmReal, "wazero-v1-amd64-linux/0a1b2c", "compiled code\n")
	pyc := writeTestFile(t, e.hermes, "cache/wasm/pyc-k/hermes_tools.pyc", "bytecode\n")
	sums := writeTestFile(t, e.hermes, "cache/wasm/pyc-k/SHA256SUMS", "abc  hermes_tools.pyc\n")
	if links {
		symlink(t, compiled, filepath.Join(e.workdir, "innocent.txt"))
	}

	for _, tc := range []struct {
		path, shown, dir string
		link             bool // through a link
	}{
		{compiled, compiled, wasmReal, false},
		{filepath.Join(wasmLink, "wazero-v1-amd64-linux", "0a1b2c"), compiled, wasmReal, true},
		{"innocent.txt", compiled, wasmReal, true},
		{filepath.Join(wasmReal, "new-dir", "x"), filepath.Join(wasmReal, "new-dir", "x"), wasmReal, false},
		{pyc, pyc, filepath.Join(e.hermes, "cache"), false},
		{sums, sums, filepath.Join(e.hermes, "cache"), false},
		{filepath.Join(e.hermes, "cache", "web", "page.md"), filepath.Join(e.hermes, "cache", "web", "page.md"), filepath.Join(e.hermes, "cache"), false},
		{filepath.Join(e.hermes, "cache", "exec", "out.txt"), filepath.Join(e.hermes, "cache", "exec", "out.txt"), filepath.Join(e.hermes, "cache"), false},
		{"~/.hermes/cache/wasm/x", filepath.Join(e.home, ".hermes", "cache", "wasm", "x"), filepath.Join(e.home, ".hermes", "cache"), false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if tc.link {
				skipWithoutSymlinks(t)
			}
			res := callJSON(t, tl, "write_file", map[string]any{"path": tc.path, "content": "native code"})
			assert.Equal(t, map[string]any{"error": cacheMsg("Write", tc.shown, tc.dir)}, res)
			res = callJSON(t, tl, "patch", map[string]any{"path": tc.path, "old_string": "code", "new_string": "evil"})
			assert.Equal(t, map[string]any{"success": false, "error": cacheMsg("Write", tc.shown, tc.dir)}, res)
		})
	}
	assert.NoDirExists(t, filepath.Join(wasmReal, "new-dir"))
	assert.NoDirExists(t, filepath.Join(e.hermes, "cache", "web"))
	assert.NoDirExists(t, filepath.Join(e.home, ".hermes"))

	// V4A, from a working dir holding the cache: every path is checked.
	tl, err = New(Options{Workdir: e.hermes, HermesHome: e.hermes})
	require.NoError(t, err)
	writeTestFile(t, e.hermes, "notes.txt", "one\n")
	for _, tc := range []struct{ name, patch, denied string }{
		{"add", "*** Begin Patch\n*** Add File: cache/wasm/pyc-k/x.pyc\n+x\n*** End Patch", cacheMsg("Write", "cache/wasm/pyc-k/x.pyc", filepath.Join(e.hermes, "cache"))},
		{"update", "*** Begin Patch\n*** Update File: cache/wasm/pyc-k/SHA256SUMS\n@@\n-abc  hermes_tools.pyc\n+def  hermes_tools.pyc\n*** End Patch", cacheMsg("Write", "cache/wasm/pyc-k/SHA256SUMS", filepath.Join(e.hermes, "cache"))},
		{"delete", "*** Begin Patch\n*** Delete File: cache/wasm/pyc-k/hermes_tools.pyc\n*** End Patch", cacheMsg("Delete", "cache/wasm/pyc-k/hermes_tools.pyc", filepath.Join(e.hermes, "cache"))},
		{"move into", "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: cache/wasm/pyc-k/hermes_tools.pyc\n*** End Patch", cacheMsg("Move", "cache/wasm/pyc-k/hermes_tools.pyc", filepath.Join(e.hermes, "cache"))},
		{"move out of", "*** Begin Patch\n*** Update File: cache/wasm/pyc-k/SHA256SUMS\n*** Move to: sums.txt\n*** End Patch", cacheMsg("Move", "cache/wasm/pyc-k/SHA256SUMS", filepath.Join(e.hermes, "cache"))},
	} {
		t.Run("v4a "+tc.name, func(t *testing.T) {
			res := callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": tc.patch})
			assert.Equal(t, map[string]any{"success": false, "error": tc.denied}, res)
		})
	}
	for p, want := range map[string]string{compiled: "compiled code\n", pyc: "bytecode\n", sums: "abc  hermes_tools.pyc\n",
		filepath.Join(e.hermes, "notes.txt"): "one\n"} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), p)
	}
	assert.NoFileExists(t, filepath.Join(e.hermes, "sums.txt"))
	assert.NoFileExists(t, filepath.Join(e.hermes, "cache", "wasm", "pyc-k", "x.pyc"))

	// Without the option, $HERMES_WASM_CACHE_DIR names the cache dir.
	other := t.TempDir()
	t.Setenv(config.CacheDirEnv, other)
	tl = e.tools(t, nil)
	res := callJSON(t, tl, "write_file", map[string]any{"path": filepath.Join(other, "f"), "content": "x"})
	assert.Equal(t, map[string]any{"error": cacheMsg("Write", filepath.Join(realOrSelf(other), "f"), realOrSelf(other))}, res)
	// Reads of the caches stay allowed (spills and saved pages are meant
	// to be read; nothing there is secret), as do writes elsewhere.
	res = callJSON(t, tl, "read_file", map[string]any{"path": sums})
	assert.Equal(t, "1|abc  hermes_tools.pyc", res["content"])
	res = callJSON(t, tl, "write_file", map[string]any{"path": "fine.txt", "content": "ok"})
	assert.NotContains(t, res, "error")
}

// TestPatchRefusesReadProtected: patch shows the file's content (its diff,
// a "closest line" hint), so it refuses what read_file refuses, before
// reading: a replace_all that changes every newline of .env or auth.json
// would otherwise return every secret in its diff.
func TestPatchRefusesReadProtected(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	env := writeTestFile(t, e.workdir, ".env", "API_KEY=sk-secret\n")
	auth := writeTestFile(t, e.hermes, "auth.json", `{"token": "sk-secret"}`+"\n")
	envMsg := "Access denied: " + env + " is a secret-bearing environment file and cannot be read to prevent credential leakage. " +
		"If you need to check the file structure, read .env.example instead." + notABoundary
	authMsg := "Access denied: " + auth + " is a Hermes credential store and cannot be read directly. " +
		"Provider tools consume these credentials through internal channels." + notABoundary
	prod := writeTestFile(t, e.workdir, "prod.env", "API_KEY=sk-secret\n")
	prodMsg := strings.Replace(envMsg, env, prod, 1)
	for path, msg := range map[string]string{".env": envMsg, auth: authMsg, "prod.env": prodMsg} {
		for _, old := range []string{"\n", "no such text"} { // a match, and a miss (the hint quotes a line)
			res := callJSON(t, tl, "patch", map[string]any{"path": path, "old_string": old, "new_string": "\n\n", "replace_all": true})
			assert.Equal(t, map[string]any{"success": false, "error": msg}, res)
		}
	}
	// V4A: an update or a deletion shows the old content; so does a move.
	for name, patch := range map[string]string{
		"update": "*** Begin Patch\n*** Update File: .env\n@@\n-API_KEY=wrong\n+API_KEY=x\n*** End Patch",
		"delete": "*** Begin Patch\n*** Delete File: .env\n*** End Patch",
		"move":   "*** Begin Patch\n*** Update File: .env\n*** Move to: leaked.txt\n*** End Patch",
	} {
		t.Run(name, func(t *testing.T) {
			res := callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": patch})
			assert.Equal(t, map[string]any{"success": false, "error": envMsg}, res)
		})
	}
	res := callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Update File: prod.env\n@@\n-API_KEY=wrong\n+API_KEY=x\n*** End Patch"})
	assert.Equal(t, map[string]any{"success": false, "error": prodMsg}, res)
	for p, want := range map[string]string{env: "API_KEY=sk-secret\n", auth: `{"token": "sk-secret"}` + "\n", prod: "API_KEY=sk-secret\n"} {
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	assert.NoFileExists(t, filepath.Join(e.workdir, "leaked.txt"))
	// Adding a new env file shows only what the patch itself brings.
	require.NoError(t, os.Remove(env))
	res = callJSON(t, tl, "patch", map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Add File: .env\n+DEBUG=1\n*** End Patch"})
	assert.Equal(t, true, res["success"], res)
}

// TestWriteRefusesRunStagingDirs: another run's private dir holds the code
// that run (a live session kernel) imports next; the file tools never write
// there. A temp dir of another name stays writable.
func TestWriteRefusesRunStagingDirs(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	for _, prefix := range stagingPrefixes {
		dir, err := os.MkdirTemp("", prefix)
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		target := filepath.Join(dir, "hermes_tools.py")
		res := callJSON(t, tl, "write_file", map[string]any{"path": target, "content": "evil = 1\n"})
		require.Contains(t, res["error"], "is in a run's private staging dir")
		require.NoFileExists(t, target)
	}
	other := t.TempDir()
	res := callJSON(t, tl, "write_file", map[string]any{"path": filepath.Join(other, "ok.txt"), "content": "fine\n"})
	require.Nil(t, res["error"], res)
}

// TestWriteRefusesOtherProfiles: a red team wrote another profile's
// compilation cache (~/.hermes/profiles/work/cache/wasm/...) and config
// from a run of the default profile; the executor of that profile would
// have run it. Every profile under a Hermes home is protected, existing
// or not, and search_files does not read another profile's secrets.
func TestWriteRefusesOtherProfiles(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, nil)
	for _, rel := range []string{
		"profiles/work/cache/wasm/wazero-v1/0a1b",
		"profiles/work/config.yaml",
		"profiles/new/.env",
	} {
		for _, root := range []string{e.hermes, filepath.Join(e.home, ".hermes")} {
			target := filepath.Join(root, filepath.FromSlash(rel))
			res := callJSON(t, tl, "write_file", map[string]any{"path": target, "content": "x"})
			require.NotNil(t, res["error"], target)
			require.Regexp(t, "denied|Refusing", res["error"], target)
			require.NoFileExists(t, target)
		}
	}
	writeTestFile(t, e.hermes, "profiles/work/.env", "API_KEY=sekrit\n")
	res := callJSON(t, tl, "search_files", map[string]any{"pattern": "sekrit", "path": e.hermes})
	require.NotContains(t, fmt.Sprint(res), "sekrit=")
	require.NotContains(t, fmt.Sprint(res), "API_KEY")
}

// TestWriteRefusesLiteralTildeCacheDir: HERMES_WASM_CACHE_DIR="~/c" is a
// literal "~" dir to the executor; both readings are protected.
func TestWriteRefusesLiteralTildeCacheDir(t *testing.T) {
	e := newSafetyEnv(t)
	tl := e.tools(t, func(o *Options) { o.WasmCacheDir = "~/wasmcache" })
	cwd, err := os.Getwd()
	require.NoError(t, err)
	for _, target := range []string{filepath.Join(cwd, "~", "wasmcache", "x"), filepath.Join(e.home, "wasmcache", "x")} {
		res := callJSON(t, tl, "write_file", map[string]any{"path": target, "content": "x"})
		require.Contains(t, res["error"], "is in the executor's cache", target)
		require.NoFileExists(t, target)
	}
}

// TestFileSafetyFoldsCase: Windows's and macOS's file systems fold case,
// so ~/.SSH is ~/.ssh there; every protected location, and the
// directories a write is confined to, match in any case.
func TestFileSafetyFoldsCase(t *testing.T) {
	if !foldCase {
		t.Skip("Linux file names are case-sensitive: ~/.SSH is another directory than ~/.ssh, so the checks compare exactly (TestWriteFileRefusesProtectedPaths)")
	}
	e := newSafetyEnv(t)
	wasm := filepath.Join(e.workdir, "wasm")
	tl := e.tools(t, func(o *Options) { o.WasmCacheDir = wasm })
	upper := func(p string) string { return strings.ToUpper(p) }
	staging, err := os.MkdirTemp("", "hermes-kernel-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(staging) })
	for p, want := range map[string]string{
		filepath.Join(e.home, ".SSH", "Authorized_Keys"):                                       "is a protected system/credential file.",
		filepath.Join(e.home, ".Netrc"):                                                        "is a protected system/credential file.",
		filepath.Join(e.home, ".Config", "GH", "hosts.yml"):                                    "is a protected system/credential file.",
		upper(filepath.Join(e.hermes, ".env")):                                                 "is a protected system/credential file.",
		filepath.Join(e.hermes, "Config.YAML"):                                                 "Refusing to write to Hermes config file",
		filepath.Join(e.hermes, "CACHE", "wasm", "x"):                                          "is in the executor's cache",
		upper(filepath.Join(wasm, "x")):                                                        "is in the executor's cache",
		filepath.Join(filepath.Dir(staging), upper(filepath.Base(staging)), "hermes_tools.py"): "is in a run's private staging dir",
	} {
		res := callJSON(t, tl, "write_file", map[string]any{"path": p, "content": "x"})
		assert.Contains(t, res["error"], want, p)
	}
	res := callJSON(t, tl, "read_file", map[string]any{"path": upper(filepath.Join(e.hermes, "auth.json"))})
	assert.Contains(t, res["error"], "is a Hermes credential store", res)

	// HERMES_WRITE_SAFE_ROOT and confinement hold the same directory in
	// another case.
	tl = e.tools(t, func(o *Options) {
		o.WriteSafeRoot = upper(e.workdir)
		o.ConfineToWorkdir = true
		o.Workdir = upper(e.workdir)
	})
	res = callJSON(t, tl, "write_file", map[string]any{"path": filepath.Join(e.workdir, "ok.txt"), "content": "ok"})
	assert.Nil(t, res["error"], res)
	res = callJSON(t, tl, "read_file", map[string]any{"path": filepath.Join(e.workdir, "ok.txt")})
	assert.Equal(t, "1|ok", res["content"], res)
}

// TestJailGuard: ReadBlock and WriteBlock, which the sandboxed project
// mode's file system asks for every path the script touches, apply the
// tools' rules: env files and Hermes's stores are not read (nor through
// a hard link), credential files, the executor's cache and Hermes's
// config are not written, and ordinary project files pass.
func TestJailGuard(t *testing.T) {
	e := newSafetyEnv(t)
	cache := filepath.Join(e.workdir, "wasm-cache")
	tl := e.tools(t, func(o *Options) { o.WasmCacheDir = cache })
	w := func(rel string) string { return filepath.Join(e.workdir, rel) }
	for _, name := range []string{".env", ".env.local", "prod.env", ".env.example", "data.csv"} {
		require.NoError(t, os.WriteFile(w(name), []byte("x"), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(e.hermes, "auth.json"), []byte("{}"), 0o600))
	require.NoError(t, os.Link(w(".env"), w("notes.txt")))

	for _, name := range []string{".env", ".env.local", "prod.env"} {
		require.Contains(t, tl.ReadBlock(w(name)), "is a secret-bearing environment file", name)
		require.Empty(t, tl.WriteBlock(w(name)), "writing an env file is allowed, as with write_file: %s", name)
	}
	require.Contains(t, tl.ReadBlock(w("notes.txt")), "is a hard link to "+w(".env"))
	require.Contains(t, tl.ReadBlock(filepath.Join(e.hermes, "auth.json")), "is a Hermes credential store")
	require.Contains(t, tl.WriteBlock(filepath.Join(e.hermes, "config.yaml")), "Refusing to write to Hermes config file")
	require.Contains(t, tl.WriteBlock(filepath.Join(cache, "x.bin")), "is in the executor's cache")
	require.Equal(t, protectedMsg(filepath.Join(e.home, ".ssh", "authorized_keys")), tl.WriteBlock(filepath.Join(e.home, ".ssh", "authorized_keys")))
	for _, ok := range []string{".env.example", "data.csv", "new/file.txt"} {
		require.Empty(t, tl.ReadBlock(w(ok)), ok)
		require.Empty(t, tl.WriteBlock(w(ok)), ok)
	}
}

// TestFileToolsRefuseWasmPackages: the package dirs of
// code_execution.wasm_packages, whose modules every strict and sandboxed
// run imports, are never written by write_file, patch or a sandboxed
// script's own open() (WriteBlock), even inside the working dir; reading
// them is fine. Before, a script of one session rewrote a package there
// and every later run of every session ran its code.
func TestFileToolsRefuseWasmPackages(t *testing.T) {
	e := newSafetyEnv(t)
	pkgs := filepath.Join(e.workdir, "vendor", "wasm")
	mod := filepath.Join(pkgs, "goodpkg", "__init__.py")
	require.NoError(t, os.MkdirAll(filepath.Dir(mod), 0o755))
	require.NoError(t, os.WriteFile(mod, []byte("def hello(): return 'genuine'\n"), 0o644))
	tl := e.tools(t, func(o *Options) { o.WasmPackages = []string{pkgs} })
	want := "is in a package dir of code_execution.wasm_packages (" + pkgs + ")"
	for _, p := range []string{mod, filepath.Join(pkgs, "evil.py"), pkgs} {
		require.Contains(t, tl.WriteBlock(p), want, p)
		require.Empty(t, tl.ReadBlock(p), p)
	}
	res := callJSON(t, tl, "write_file", map[string]any{"path": "vendor/wasm/goodpkg/__init__.py", "content": "def hello(): return 'tampered'\n"})
	require.Contains(t, res["error"], want)
	res = callJSON(t, tl, "patch", map[string]any{"path": mod, "old_string": "genuine", "new_string": "tampered"})
	require.Contains(t, res["error"], want)
	b, err := os.ReadFile(mod)
	require.NoError(t, err)
	require.Equal(t, "def hello(): return 'genuine'\n", string(b))
	require.Empty(t, e.tools(t, nil).WriteBlock(mod), "without the setting it is an ordinary dir")
}
