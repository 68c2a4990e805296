//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

// mcpSDKVersion is the official TypeScript MCP SDK the node client test
// installs from npm.
const mcpSDKVersion = "1.32.2"

// nodeMCPSDK returns a dir whose node_modules holds the official MCP SDK,
// installed once per machine under the user cache dir (printing the npm
// command), with node and npm from Debian when missing.
func nodeMCPSDK(t *testing.T) (node, dir string) {
	t.Helper()
	node = backendtest.Program(t, "node", "/usr/bin/node", "nodejs")
	npm := backendtest.Program(t, "npm", "/usr/bin/npm", "npm")
	base, err := os.UserCacheDir()
	require.NoError(t, err)
	dir = filepath.Join(base, "hermes-wasm-exec", "npm-mcp-sdk-"+mcpSDKVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err == nil {
		return node, dir
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o755))
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".npm-mcp-sdk-")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	args := []string{"install", "--no-audit", "--no-fund", "--prefix", tmp, "@modelcontextprotocol/sdk@" + mcpSDKVersion}
	fmt.Fprintf(os.Stderr, "+ npm %v\n", args)
	out, err := exec.Command(npm, args...).CombinedOutput()
	require.NoError(t, err, "npm install of the official MCP SDK failed (the npm registry must be reachable): %s", out)
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		require.DirExists(t, dir, "installing the SDK: %v", err)
	}
	return node, dir
}

// TestMCPHTTPNodeClient: the official TypeScript MCP client
// (@modelcontextprotocol/sdk's StreamableHTTPClientTransport) talks to
// `mcp --http` as an agent would: bearer token, tools/list, two calls in
// one session (state persists), session termination.
func TestMCPHTTPNodeClient(t *testing.T) {
	t.Parallel()
	node, dir := nodeMCPSDK(t)
	script := filepath.Join(dir, fmt.Sprintf("client-%d.mjs", os.Getpid()))
	b, err := os.ReadFile("../../testdata/clients/mcp_http_client.mjs")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, b, 0o644))
	t.Cleanup(func() { os.Remove(script) })

	const token = "node-client-token"
	s := startHTTPMCP(t, []string{"HERMES_SERVE_TOKEN=" + token})
	require.NoError(t, os.WriteFile(filepath.Join(s.workdir, "notes.txt"), []byte("a\nb\n"), 0o644))
	s.waitReady(t)
	cmd := exec.Command(node, script, s.base+"/mcp")
	cmd.Env = append(os.Environ(), "HERMES_SERVE_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\nserver:\n%s", out, s.stderr.String())
	var got struct {
		Tools   []string
		Session string
		Calls   []struct {
			Text, Status string
			IsError      bool
		}
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Equal(t, []string{"execute_code"}, got.Tools)
	require.NotEmpty(t, got.Session)
	require.Len(t, got.Calls, 2)
	require.Equal(t, "2\n", got.Calls[0].Text)
	require.Equal(t, "42\n", got.Calls[1].Text, "the session's kernel kept n")
	require.Equal(t, "success", got.Calls[1].Status)

	// Without the token the client cannot connect.
	cmd = exec.Command(node, script, s.base+"/mcp")
	cmd.Env = append(os.Environ(), "HERMES_SERVE_TOKEN=wrong")
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "401")
}

// TestMCPDocEntryNodeClient: docs/mcp.md's client entry works as written:
// after `make install` puts hermes-wasm-exec on PATH, the
// official TypeScript MCP client starts the entry's command with its
// arguments (the project path made a real dir) and calls execute_code.
func TestMCPDocEntryNodeClient(t *testing.T) {
	t.Parallel()
	node, dir := nodeMCPSDK(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "mcp.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```json\n(\\{\"mcpServers\".*?)\n```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/mcp.md has an mcpServers entry in a json block")
	var conf struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal(m[1], &conf))
	entry, ok := conf.MCPServers["hermes"]
	require.True(t, ok, "the entry is named hermes")
	project := t.TempDir()
	for i, a := range entry.Args {
		if a == "/path/to/project" {
			entry.Args[i] = project
		}
	}
	entryFile := filepath.Join(t.TempDir(), "entry.json")
	b, err := json.Marshal(entry)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(entryFile, b, 0o600))

	gobin := t.TempDir()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	install := exec.Command("make", "-s", "install")
	install.Dir = root
	install.Env = append(os.Environ(), "GOBIN="+gobin, "GO="+goTool)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)

	script := filepath.Join(dir, fmt.Sprintf("stdio-client-%d.mjs", os.Getpid()))
	client, err := os.ReadFile("../../testdata/clients/mcp_stdio_client.mjs")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, client, 0o644))
	t.Cleanup(func() { os.Remove(script) })
	cmd := exec.Command(node, script, entryFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+gobin+":/usr/local/bin:/usr/bin:/bin", "HERMES_HOME="+t.TempDir())
	res, err := cmd.Output()
	require.NoError(t, err, "%s", res)
	var got struct {
		Tools  []string `json:"tools"`
		Text   string   `json:"text"`
		Status string   `json:"status"`
	}
	require.NoError(t, json.Unmarshal(res, &got), "%s", res)
	require.Equal(t, []string{"execute_code"}, got.Tools)
	require.Equal(t, "success", got.Status, got.Text)
	require.Equal(t, "42 (3, 13)\n", got.Text)
}
