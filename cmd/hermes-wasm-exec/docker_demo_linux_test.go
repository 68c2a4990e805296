package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

// dockerDemoCwd is terminal.cwd in the demo's container: a dir the image
// does not have, which no file of this host is written to.
const dockerDemoCwd = "/work"

// dockerDemoConfig is a user's config.yaml selecting the docker backend.
func dockerDemoConfig(image string) string {
	return fmt.Sprintf(`code_execution:
  warm_pool: 0
  timeout: 120
terminal:
  backend: docker
  docker_image: %s
  docker_network: false
  container_persistent: false
  cwd: %s
`, image, dockerDemoCwd)
}

// demoFiles are the demo project's app/*.py files by base name.
func demoFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../../testdata/project/app/*.py")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		files[filepath.Base(p)] = string(b)
	}
	return files
}

// demoExpected is what `make demo` prints: data_pipeline.py run in strict
// mode on testdata/project, on this host, with no config.
func demoExpected(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	code, stdout, stderr := child(t, []string{"HERMES_HOME=" + t.TempDir(), "TMPDIR=" + tmp}, "",
		"run", "--mode", "strict", "--workdir", "../../testdata/project", "../../testdata/examples/data_pipeline.py")
	require.Equal(t, 0, code, stdout+stderr)
	var res result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Equal(t, "success", res.Status, res.Output)
	require.Contains(t, res.Output, `"functions": 6`)
	requireEmptyDir(t, tmp)
	return res.Output
}

// hermesContainers lists the names of the engine's containers this
// executor started (every one, running or not) that match the filters.
func hermesContainers(t *testing.T, d *backendtest.DockerEngine, filters ...string) []string {
	t.Helper()
	args := []string{"ps", "-a", "--format", "{{.Names}}", "--filter", "label=hermes-wasm-exec=1"}
	for _, f := range filters {
		args = append(args, "--filter", "label="+f)
	}
	return strings.Fields(d.Run(t, args...))
}

// procsWithEnv lists the processes of this host whose environment holds
// kv (the docker clients of the test's engine have its DOCKER_HOST), each
// as "PID: COMMAND LINE".
func procsWithEnv(kv string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		env, err := os.ReadFile(dir + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		found = append(found, strings.TrimPrefix(dir, "/proc/")+": "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return found
}

// TestDockerBackendDemo: a user sets
// terminal.backend: docker in the config, and the README's demo script
// (testdata/examples/data_pipeline.py, what `make demo` runs on
// testdata/project) runs through serve with every tool call landing in the
// container, the session's kernel persisting across serve calls; the
// container goes with the session. run does the same for one script.
func TestDockerBackendDemo(t *testing.T) {
	d := backendtest.Docker(t)
	want := demoExpected(t)
	_, err := os.Stat(filepath.Join(dockerDemoCwd, "app"))
	require.ErrorIs(t, err, os.ErrNotExist, "the host must not have %s/app before the test", dockerDemoCwd)

	t.Run("serve", func(t *testing.T) {
		e := newServeEnv(t, "")
		e.conf = filepath.Join(e.home, "config.yaml")
		require.NoError(t, os.WriteFile(e.conf, []byte(dockerDemoConfig(d.Image)), 0o600))
		e.env = append(e.env, d.Env...)
		p := e.start()
		session := fmt.Sprintf("readme-demo-%d", os.Getpid())
		call := func(mode, code string) result {
			t.Helper()
			began := time.Now()
			res := p.exec(t, map[string]any{"code": code, "mode": mode, "session": session})
			t.Logf("%s call: %v", mode, time.Since(began).Round(time.Millisecond))
			require.Equal(t, "success", res.Status, "%+v\nserve's stderr:\n%s", res, p.stderr.String())
			return res
		}

		// Call 1, strict: the demo project's files written into the container.
		files, err := json.Marshal(demoFiles(t))
		require.NoError(t, err)
		res := call("strict", `from hermes_tools import write_file
files = `+string(files)+`
for name, text in sorted(files.items()):
    r = write_file("app/" + name, text)
    print(name, r.get("bytes_written"), r.get("error"))
`)
		var wrote []string
		for name, text := range demoFiles(t) {
			wrote = append(wrote, fmt.Sprintf("%s %d None", name, len(text)))
		}
		assert.ElementsMatch(t, wrote, strings.Split(strings.TrimSpace(res.Output), "\n"))
		ctrs := hermesContainers(t, d, "hermes-wasm-exec.session="+session)
		require.Len(t, ctrs, 1, "one container for the session")
		ctr := ctrs[0]

		// Call 2, project: the README's demo, verbatim, prints what make demo prints.
		demo, err := os.ReadFile("../../testdata/examples/data_pipeline.py")
		require.NoError(t, err)
		res = call("project", string(demo))
		assert.Equal(t, want, res.Output)
		assert.Equal(t, 5, res.ToolCallsMade)
		assert.Equal(t, "project", res.Mode)

		// Call 3, project: the same kernel (call 2's summary is still
		// there), running in the container, where the files are.
		res = call("project", `import json, os, socket
print(json.dumps({"summary": sorted(summary), "cwd": os.getcwd(), "app": sorted(os.listdir("app")), "hostname": socket.gethostname()}))`)
		require.NotNil(t, res.Kernel)
		assert.True(t, res.Kernel.Reused, "call 3 ran in call 2's kernel: %+v", res.Kernel)
		var got struct {
			Summary, App  []string
			Cwd, Hostname string
		}
		require.NoError(t, json.Unmarshal([]byte(res.Output), &got), res.Output)
		assert.Equal(t, []string{"app/__init__.py", "app/orders.py", "app/users.py", "app/util.py"}, got.Summary)
		assert.Equal(t, dockerDemoCwd, got.Cwd)
		assert.Equal(t, []string{"__init__.py", "orders.py", "users.py", "util.py"}, got.App)
		assert.Equal(t, d.Run(t, "inspect", "-f", "{{.Config.Hostname}}", ctr), got.Hostname)
		hostname, _ := os.Hostname()
		assert.NotEqual(t, hostname, got.Hostname)

		// The files are in the container, not on this host.
		assert.Equal(t, "__init__.py\norders.py\nusers.py\nutil.py", d.Run(t, "exec", ctr, "ls", dockerDemoCwd+"/app"))
		assert.Equal(t, demoFiles(t)["users.py"], d.Run(t, "exec", ctr, "cat", dockerDemoCwd+"/app/users.py")+"\n")
		for _, dir := range []string{filepath.Join(dockerDemoCwd, "app"), filepath.Join(e.workdir, "app"), filepath.Join(e.home, "app")} {
			_, err := os.Stat(dir)
			assert.ErrorIs(t, err, os.ErrNotExist, "%s on the host", dir)
		}

		// close_session removes the (non-persistent) container.
		m := p.call(t, "close_session", map[string]any{"session": session})
		require.Nil(t, m.Error, "%+v", m.Error)
		assert.Empty(t, hermesContainers(t, d, "hermes-wasm-exec.session="+session), "the session's container is gone")

		// A session still open when serve ends: its container goes with it.
		other := session + "-open"
		res = p.exec(t, map[string]any{"code": "from hermes_tools import terminal\nprint(terminal('hostname')['output'], end='')", "mode": "strict", "session": other})
		require.Equal(t, "success", res.Status, "%+v", res)
		ctrs = hermesContainers(t, d, "hermes-wasm-exec.session="+other)
		require.Len(t, ctrs, 1)
		assert.Equal(t, d.Run(t, "inspect", "-f", "{{.Config.Hostname}}", ctrs[0])+"\n", res.Output)
		p.stdin.Close()
		require.Equal(t, 0, p.waitExit(60*time.Second), "serve's stderr:\n%s", p.stderr.String())
		assert.Empty(t, hermesContainers(t, d), "serve's end removed every container it started")
		assert.Empty(t, procsWithEnv(d.Env[0]), "a docker client outlived serve")
	})

	t.Run("run", func(t *testing.T) {
		home, tmp, workdir := t.TempDir(), t.TempDir(), t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.yaml"), []byte(dockerDemoConfig(d.Image)), 0o600))
		env := append([]string{"HERMES_HOME=" + home, "TMPDIR=" + tmp}, d.Env...)
		code, stdout, stderr := child(t, env, "from hermes_tools import terminal\nr = terminal('cat /etc/debian_version; hostname; pwd')\nprint(r['exit_code'])\nprint(r['output'], end='')\n",
			"run", "--mode", "strict", "--workdir", workdir, "-")
		require.Equal(t, 0, code, stdout+stderr)
		var res result
		require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
		require.Equal(t, "success", res.Status, "%+v\n%s", res, stderr)
		lines := strings.Split(strings.TrimSuffix(res.Output, "\n"), "\n")
		require.Len(t, lines, 4, res.Output)
		assert.Equal(t, "0", lines[0])
		// The image's Debian and a container's hostname (its short id).
		assert.Equal(t, d.Run(t, "run", "--rm", "--network", "none", d.Image, "cat", "/etc/debian_version"), lines[1])
		assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}$`), lines[2])
		hostname, _ := os.Hostname()
		assert.NotEqual(t, hostname, lines[2])
		assert.Equal(t, dockerDemoCwd, lines[3])
		assert.Empty(t, hermesContainers(t, d), "run removed its container")
		assert.Empty(t, procsWithEnv(d.Env[0]), "a docker client outlived run")
		requireEmptyDir(t, tmp)
		requireEmptyDir(t, workdir)
	})
}
