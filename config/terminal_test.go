package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// withHome makes "~" expand to home for the test.
func withHome(t *testing.T, home string) {
	t.Helper()
	old := userHomeDir
	userHomeDir = func() (string, error) { return home, nil }
	t.Cleanup(func() { userHomeDir = old })
}

func TestTerminalDefaults(t *testing.T) {
	d := Default().Terminal
	want := Terminal{Backend: "local", DockerImage: "nikolaik/python-nodejs:python3.11-nodejs20",
		DockerNetwork: true, ContainerCPU: 1, ContainerMemoryMB: 5120, ContainerPersistent: true, SSHPort: 22}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got  %+v\nwant %+v", d, want)
	}
	if !slices.Equal(Backends, []string{BackendLocal, BackendDocker, BackendSSH, BackendExec}) ||
		BackendDocker != "docker" || BackendSSH != "ssh" || BackendExec != "exec" {
		t.Fatalf("backends %q", Backends)
	}
}

func TestTerminalValid(t *testing.T) {
	withHome(t, "/home/u")
	for _, tt := range []struct {
		name string
		in   string
		want func(*Terminal)
	}{
		{"null backend", "backend:\n", nil},
		{"empty backend", "backend: ''\n", nil},
		{"upper-case local", "backend: ' LOCAL '\n", nil},
		{"docker", "backend: Docker\n", func(t *Terminal) { t.Backend = "docker" }},
		{"docker settings", `backend: docker
cwd: /workspace
docker_image: python:3.12-slim
docker_network: false
docker_volumes: ["/srv/data:/data:ro", "cache:/cache"]
docker_env: {DEBUG: "1", LEVEL: 3, RATIO: 0.5}
docker_forward_env: [GITHUB_TOKEN]
docker_extra_args: ["--cap-drop", ALL, "--pids-limit", 256]
container_cpu: 0.5
container_memory: 2048
container_persistent: no
`, func(t *Terminal) {
			t.Backend, t.Cwd, t.DockerImage, t.DockerNetwork = "docker", "/workspace", "python:3.12-slim", false
			t.DockerVolumes = []string{"/srv/data:/data:ro", "cache:/cache"}
			t.DockerEnv = map[string]string{"DEBUG": "1", "LEVEL": "3", "RATIO": "0.5"}
			t.DockerForwardEnv = []string{"GITHUB_TOKEN"}
			t.DockerExtraArgs = []string{"--cap-drop", "ALL", "--pids-limit", "256"}
			t.ContainerCPU, t.ContainerMemoryMB, t.ContainerPersistent = 0.5, 2048, false
		}},
		{"docker_env as a list", "docker_env: [\"A=1\", \"B=x=y\", \"C=\"]\n", func(t *Terminal) {
			t.DockerEnv = map[string]string{"A": "1", "B": "x=y", "C": ""}
		}},
		{"no limits", "container_cpu: 0\ncontainer_memory: 0\n", func(t *Terminal) { t.ContainerCPU, t.ContainerMemoryMB = 0, 0 }},
		{"null lists and image", "docker_image:\ndocker_volumes:\ndocker_env:\nexec_command:\n", nil},
		{"empty docker_env", "docker_env: {}\n", nil},
		{"ssh", "backend: ssh\nssh_host: build.example.com\nssh_user: ci\nssh_port: 2222\nssh_key: ~/.ssh/id_ed25519\nssh_known_hosts: /etc/ssh/known\n",
			func(t *Terminal) {
				t.Backend, t.SSHHost, t.SSHUser, t.SSHPort = "ssh", "build.example.com", "ci", 2222
				t.SSHKey, t.SSHKnownHosts = "/home/u/.ssh/id_ed25519", "/etc/ssh/known"
			}},
		{"ssh key relative", "ssh_key: keys/id\n", func(t *Terminal) { t.SSHKey = "keys/id" }},
		{"exec", "backend: exec\nexec_command: [kubectl, exec, -i, pod-1, --]\n", func(t *Terminal) {
			t.Backend, t.ExecCommand = "exec", []string{"kubectl", "exec", "-i", "pod-1", "--"}
		}},
		{"client_env", "backend: exec\nexec_command: [kubectl, exec, -i, pod-1, --]\nclient_env: [AWS_PROFILE, HTTPS_PROXY, MY_TOKEN]\n", func(t *Terminal) {
			t.Backend, t.ExecCommand = "exec", []string{"kubectl", "exec", "-i", "pod-1", "--"}
			t.ClientEnv = []string{"AWS_PROFILE", "HTTPS_PROXY", "MY_TOKEN"}
		}},
		{"null client_env", "client_env:\n", nil},
		// The keys of another backend are read but not required.
		{"local with ssh keys", "ssh_host: h\n", func(t *Terminal) { t.SSHHost = "h" }},
	} {
		cfg, err := Parse([]byte("terminal:\n"+indent(tt.in)), "config.yaml")
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		want := Default().Terminal
		if tt.want != nil {
			tt.want(&want)
		}
		if !reflect.DeepEqual(cfg.Terminal, want) {
			t.Errorf("%s:\n got  %+v\n want %+v", tt.name, cfg.Terminal, want)
		}
		if cfg.Warnings != nil {
			t.Errorf("%s: warnings %q", tt.name, cfg.Warnings)
		}
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

func TestTerminalErrors(t *testing.T) {
	withHome(t, "/home/u")
	for _, tt := range []struct {
		in, key, msg string
		line         int
	}{
		{"backend: modal\n", "terminal.backend",
			`terminal.backend "modal" is not available in hermes-wasm-exec: its API cannot be reached from here; use local, docker, ssh or exec (a command prefix such as ["kubectl","exec","-i","POD","--"]); see docs/backends/`, 2},
		{"backend: daytona\n", "terminal.backend", `terminal.backend "daytona" is not available in hermes-wasm-exec: its API cannot be reached from here;`, 2},
		{"backend: singularity\n", "terminal.backend", `terminal.backend "singularity" is not available in hermes-wasm-exec: there is no backend for it here, but its CLI can be the exec backend's prefix (terminal.exec_command: ["apptainer", "exec", "IMAGE"]); use local`, 2},
		{"backend: dokcer\n", "terminal.backend", `terminal.backend "dokcer" is not available in hermes-wasm-exec: it is not a terminal backend (did you mean "docker"?); use local`, 2},
		{"backend: 3\n", "terminal.backend", `terminal.backend must be a string naming a terminal backend (local, docker, ssh or exec), got integer "3"`, 2},
		{"cwd: [a]\n", "terminal.cwd", `terminal.cwd must be a string, got a list`, 2},
		{"docker_image: 3\n", "terminal.docker_image", `terminal.docker_image must be a string, got integer "3"`, 2},
		{"docker_image: '--privileged'\n", "terminal.docker_image", `terminal.docker_image is "--privileged", which starts with "-", which docker would take for an option`, 2},
		{"docker_image: 'a b'\n", "terminal.docker_image", `terminal.docker_image is "a b", which contains spaces or control characters`, 2},
		{"docker_network: maybe\n", "terminal.docker_network", `terminal.docker_network must be true or false, got string "maybe"`, 2},
		{"docker_volumes: /a:/b\n", "terminal.docker_volumes", `terminal.docker_volumes must be a list of volumes such as "/srv/data:/data:ro", got string "/a:/b"`, 2},
		{"docker_volumes:\n    - /a:/b\n    - /data\n", "terminal.docker_volumes[1]", `terminal.docker_volumes[1] is "/data", which is not source:target or source:target:options with an absolute target path`, 4},
		{"docker_volumes: [':/b']\n", "terminal.docker_volumes[0]", `terminal.docker_volumes[0] is ":/b", which is not source:target`, 2},
		{"docker_volumes: ['/a:b']\n", "terminal.docker_volumes[0]", `terminal.docker_volumes[0] is "/a:b", which is not source:target`, 2},
		{"docker_volumes: ['/a:/b:ro:x']\n", "terminal.docker_volumes[0]", `terminal.docker_volumes[0] is "/a:/b:ro:x", which is not source:target`, 2},
		{"docker_volumes: [3]\n", "terminal.docker_volumes[0]", `terminal.docker_volumes[0] must be a string, got integer "3"`, 2},
		{"docker_env: A=1\n", "terminal.docker_env", `terminal.docker_env must be a mapping of variable names to values (or a list of "NAME=value" strings), got string "A=1"`, 2},
		{"docker_env: {1A: x}\n", "terminal.docker_env.1A", `terminal.docker_env.1A: "1A" is not an environment variable name`, 2},
		{"docker_env: {A: [x]}\n", "terminal.docker_env.A", `terminal.docker_env.A must be a string or a number, got a list`, 2},
		{"docker_env: {A: true}\n", "terminal.docker_env.A", `terminal.docker_env.A must be a string or a number, got boolean "true"; quote it`, 2},
		{"docker_env: {A: }\n", "terminal.docker_env.A", `terminal.docker_env.A must be a string or a number, got null`, 2},
		{"docker_env: [A]\n", "terminal.docker_env[0]", `terminal.docker_env[0] is "A", which has no "="; write NAME=value`, 2},
		{"docker_env: [A=1, A=2]\n", "terminal.docker_env[1]", `terminal.docker_env sets A twice; keep only one`, 2},
		{"docker_env: [\"B C=1\"]\n", "terminal.docker_env[0]", `terminal.docker_env[0]: "B C" is not an environment variable name`, 2},
		{"docker_forward_env: [A-B]\n", "terminal.docker_forward_env[0]", `terminal.docker_forward_env[0] is "A-B", which is not an environment variable name`, 2},
		{"docker_forward_env: {A: 1}\n", "terminal.docker_forward_env", `terminal.docker_forward_env must be a list of environment variable names, got a mapping`, 2},
		{"docker_extra_args: --rm\n", "terminal.docker_extra_args", `terminal.docker_extra_args must be a list of arguments of docker run, got string "--rm"`, 2},
		{"docker_extra_args: [[a]]\n", "terminal.docker_extra_args[0]", `terminal.docker_extra_args[0] must be a string, got a list`, 2},
		{"container_cpu: two\n", "terminal.container_cpu", `terminal.container_cpu must be a number of CPUs (such as 1 or 0.5; 0 for no limit), got string "two"`, 2},
		{"container_cpu: -1\n", "terminal.container_cpu", `terminal.container_cpu is -1, which is out of range (must be 0 or more; 0 means no limit)`, 2},
		{"container_cpu: .nan\n", "terminal.container_cpu", `terminal.container_cpu is .nan, which is out of range`, 2},
		{"container_memory: 1.5\n", "terminal.container_memory", `terminal.container_memory must be an integer (MB), got float "1.5"`, 2},
		{"container_memory: -5\n", "terminal.container_memory", `terminal.container_memory is -5, which is out of range (must be 0 or more)`, 2},
		{"container_persistent: 1\n", "terminal.container_persistent", `terminal.container_persistent must be true or false, got integer "1"`, 2},
		{"ssh_host: -oProxyCommand=x\n", "terminal.ssh_host", `terminal.ssh_host is "-oProxyCommand=x", which starts with "-", which ssh would take for an option`, 2},
		{"ssh_user: 7\n", "terminal.ssh_user", `terminal.ssh_user must be a string, got integer "7"`, 2},
		{"ssh_port: 0\n", "terminal.ssh_port", `terminal.ssh_port is 0, which is out of range (must be between 1 and 65535)`, 2},
		{"ssh_port: 65536\n", "terminal.ssh_port", `terminal.ssh_port is 65536, which is out of range`, 2},
		{"ssh_port: '22'\n", "terminal.ssh_port", `terminal.ssh_port must be an integer, got string "22"`, 2},
		{"ssh_key: ~root/.ssh/id\n", "terminal.ssh_key", `terminal.ssh_key is "~root/.ssh/id", which starts with "~" but not "~/"`, 2},
		{"ssh_known_hosts: [a]\n", "terminal.ssh_known_hosts", `terminal.ssh_known_hosts must be a string, got a list`, 2},
		{"exec_command: kubectl exec\n", "terminal.exec_command", `terminal.exec_command must be a list of the command prefix, such as ["kubectl", "exec", "-i", "POD", "--"], got string "kubectl exec"`, 2},
		{"exec_command: ['', x]\n", "terminal.exec_command[0]", `terminal.exec_command[0] is empty; the first item names the program`, 2},
		{"exec_command: [a, {b: c}]\n", "terminal.exec_command[1]", `terminal.exec_command[1] must be a string, got a mapping`, 2},
		{"client_env: [HTTPS_PROXY, OPENAI_API_KEY]\n", "terminal.client_env[1]",
			`terminal.client_env[1] is "OPENAI_API_KEY", which names a credential the host manages, which never reaches a backend's client: remove it from the list`, 2},
		{"client_env:\n- gh_token\n", "terminal.client_env[0]", `terminal.client_env[0] is "gh_token", which names a credential the host manages`, 3},
		{"client_env: [AUXILIARY_VISION_API_KEY]\n", "terminal.client_env[0]", `terminal.client_env[0] is "AUXILIARY_VISION_API_KEY", which names a credential the host manages`, 2},
		{"client_env: [A-B]\n", "terminal.client_env[0]", `terminal.client_env[0] is "A-B", which is not an environment variable name`, 2},
		{"client_env: HTTPS_PROXY\n", "terminal.client_env", `terminal.client_env must be a list of environment variable names, got string "HTTPS_PROXY"`, 2},
		// What the backend needs.
		{"backend: ssh\n", "terminal.ssh_host",
			`terminal.backend is "ssh" but terminal.ssh_host and terminal.ssh_user are not both set (neither is); set both in the terminal section, or TERMINAL_SSH_HOST and TERMINAL_SSH_USER in the environment`, 2},
		{"ssh_user: ci\nbackend: ssh\n", "terminal.ssh_host", `terminal.backend is "ssh" but terminal.ssh_host and terminal.ssh_user are not both set (ssh_host is missing)`, 3},
		{"backend: ssh\nssh_host: h\nssh_user: ''\n", "terminal.ssh_user", `terminal.backend is "ssh" but terminal.ssh_host and terminal.ssh_user are not both set (ssh_user is missing)`, 2},
		{"backend: exec\n", "terminal.exec_command",
			`terminal.backend is "exec" but terminal.exec_command is not set: set it to the command prefix that runs a command in the target, such as ["kubectl", "exec", "-i", "POD", "--"]`, 2},
		{"backend: exec\nexec_command: []\n", "terminal.exec_command", `terminal.backend is "exec" but terminal.exec_command is not set`, 2},
	} {
		_, err := Parse([]byte("terminal:\n"+indent(tt.in)), "config.yaml")
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: got %v, want a *config.Error", tt.in, err)
			continue
		}
		want := "config.yaml: line " + strconv.Itoa(tt.line) + ": " + tt.msg
		if ce.Key != tt.key || ce.Line != tt.line || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q:\n got  key %q line %d %s\n want key %q line %d %s", tt.in, ce.Key, ce.Line, err, tt.key, tt.line, want)
		}
	}
}

func TestTerminalRemoteCwd(t *testing.T) {
	for _, tt := range []struct{ backend, cwd, want string }{
		{"local", "/srv", ""}, {"local", "", ""},
		{"docker", "", "/root"}, {"docker", ".", "/root"}, {"docker", "src", "/root"}, {"docker", "/workspace", "/workspace"},
		{"ssh", "", "~"}, {"ssh", ".", "~"}, {"ssh", "/srv/app", "/srv/app"}, {"ssh", "work", "work"},
		{"exec", "", ""}, {"exec", ".", ""}, {"exec", "/app", "/app"},
	} {
		if got := (Terminal{Backend: tt.backend, Cwd: tt.cwd}).RemoteCwd(); got != tt.want {
			t.Errorf("%s %q: got %q, want %q", tt.backend, tt.cwd, got, tt.want)
		}
	}
	// A relative cwd with docker is a warning; with the local backend it says it does not apply.
	cfg, err := Parse([]byte("terminal:\n  backend: docker\n  cwd: src\n"), "config.yaml")
	if err != nil || !slices.Equal(cfg.Warnings, []string{`config.yaml: line 3: terminal.cwd "src" is not an absolute path, which a container cannot use; docker commands run in /root (set an absolute path such as "/workspace")`}) {
		t.Fatalf("%v %q", err, cfg.Warnings)
	}
	if v := cfg.Used[1]; v.Path != "terminal.cwd" || v.Value != "/root" {
		t.Fatalf("used %+v", v)
	}
}

func TestTerminalSSHKnownHostsPath(t *testing.T) {
	withHome(t, "/home/u")
	if got := (Terminal{}).SSHKnownHostsPath(); got != filepath.Join("/home/u", ".ssh", "known_hosts") {
		t.Fatalf("default: %q", got)
	}
	if got := (Terminal{SSHKnownHosts: "/k"}).SSHKnownHostsPath(); got != "/k" {
		t.Fatalf("set: %q", got)
	}
}

func TestTerminalUsed(t *testing.T) {
	withHome(t, "/home/u")
	cfg, err := Parse([]byte(`terminal:
  backend: ssh
  cwd: ""
  ssh_host: h
  ssh_user: u
  ssh_port: 2200
  ssh_key: ~/id
  ssh_known_hosts: ""
  exec_command: [kubectl, exec]
  client_env: [HTTPS_PROXY, AWS_PROFILE]
  docker_env: {B: "2", A: "1"}
  docker_volumes: ["/a:/b"]
  container_cpu: 2.5
  container_disk: 100
`), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, k := range cfg.Used {
		used = append(used, k.Path+"="+k.Value)
	}
	want := []string{"terminal.backend=ssh", "terminal.cwd=~", "terminal.ssh_host=h", "terminal.ssh_user=u",
		"terminal.ssh_port=2200", "terminal.ssh_key=/home/u/id", `terminal.ssh_known_hosts=""`,
		"terminal.exec_command=[kubectl, exec]", "terminal.client_env=[HTTPS_PROXY, AWS_PROFILE]", "terminal.docker_env=[A, B]", "terminal.docker_volumes=[/a:/b]",
		"terminal.container_cpu=2.5"}
	if !slices.Equal(used, want) {
		t.Fatalf("used\n  %q\nwant\n  %q", used, want)
	}
	if n := cfg.Used[9].Note; n != "names only; values not shown" {
		t.Fatalf("docker_env's note %q", n)
	}
	if len(cfg.Ignored) != 1 || cfg.Ignored[0].Path != "terminal.container_disk" || cfg.Warnings != nil {
		t.Fatalf("ignored %v, warnings %q", cfg.Ignored, cfg.Warnings)
	}
}

// TestTerminalEnv: Hermes's TERMINAL_* variables override the file in Load, blank ones are
// unset, and an invalid one is an error naming it.
func TestTerminalEnv(t *testing.T) {
	withHome(t, "/home/u")
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	vars := []string{"TERMINAL_ENV", "TERMINAL_CWD", "TERMINAL_DOCKER_IMAGE", "TERMINAL_SSH_HOST",
		"TERMINAL_SSH_USER", "TERMINAL_SSH_PORT", "TERMINAL_SSH_KEY", "HERMES_TIMEZONE"}
	setenv := func(kv map[string]string) {
		for _, v := range vars {
			t.Setenv(v, kv[v])
		}
	}
	load := func(file string, env map[string]string) (Config, error) {
		t.Helper()
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		setenv(env)
		return Load(path)
	}

	// The host and user of an ssh backend may come from the environment alone.
	cfg, err := load("terminal:\n  backend: ssh\n  ssh_port: 2200\n", map[string]string{
		"TERMINAL_SSH_HOST": " build.example.com ", "TERMINAL_SSH_USER": "ci", "TERMINAL_SSH_PORT": "2222",
		"TERMINAL_SSH_KEY": "~/.ssh/k", "TERMINAL_CWD": "/srv", "TERMINAL_DOCKER_IMAGE": "alpine:3"})
	if err != nil {
		t.Fatal(err)
	}
	tm := cfg.Terminal
	if tm.Backend != "ssh" || tm.SSHHost != "build.example.com" || tm.SSHUser != "ci" || tm.SSHPort != 2222 ||
		tm.SSHKey != "/home/u/.ssh/k" || tm.Cwd != "/srv" || tm.DockerImage != "alpine:3" {
		t.Fatalf("got %+v", tm)
	}
	if k := cfg.Used[1]; k.Path != "terminal.ssh_port" || k.Value != "2222" || k.Note != "overridden by TERMINAL_SSH_PORT=2222" {
		t.Fatalf("used %+v", k)
	}

	// TERMINAL_ENV wins over the file, and what it needs is checked after it.
	if cfg, err := load("terminal:\n  backend: local\n  exec_command: [sh, -c]\n", map[string]string{"TERMINAL_ENV": "Exec"}); err != nil ||
		cfg.Terminal.Backend != "exec" || cfg.Used[0].Value != "exec" {
		t.Fatalf("TERMINAL_ENV: %v %+v", err, cfg.Terminal)
	}
	_, err = load("model: x\n", map[string]string{"TERMINAL_ENV": "ssh", "TERMINAL_SSH_HOST": "h"})
	if err == nil || err.Error() != path+`: terminal.backend is "ssh" (from TERMINAL_ENV) but terminal.ssh_host and terminal.ssh_user are not both set (ssh_user is missing); set both in the terminal section, or TERMINAL_SSH_HOST and TERMINAL_SSH_USER in the environment` {
		t.Fatalf("got %v", err)
	}
	// Blank means unset.
	if cfg, err := load("terminal:\n  backend: docker\n", map[string]string{"TERMINAL_ENV": "  ", "TERMINAL_SSH_PORT": " "}); err != nil ||
		cfg.Terminal.Backend != "docker" || cfg.Terminal.SSHPort != 22 {
		t.Fatalf("blank: %v %+v", err, cfg.Terminal)
	}
	// Hermes's own working dir in TERMINAL_CWD means nothing in a container: ignored, as in
	// Hermes.
	if cfg, err := load("terminal:\n  backend: docker\n  cwd: /app\n", map[string]string{"TERMINAL_CWD": "/home/me/proj"}); err != nil ||
		cfg.Terminal.RemoteCwd() != "/app" || len(cfg.Notes) != 1 {
		t.Fatalf("host TERMINAL_CWD: %v %+v %q", err, cfg.Terminal, cfg.Notes)
	}
	// Without a file.
	os.Remove(path)
	setenv(map[string]string{"TERMINAL_ENV": "docker", "TERMINAL_DOCKER_IMAGE": "python:3"})
	t.Setenv("HERMES_HOME", dir)
	if cfg, err := Load(""); err != nil || cfg.Terminal.Backend != "docker" || cfg.Terminal.DockerImage != "python:3" || cfg.Source != "" {
		t.Fatalf("no file: %v %+v", err, cfg)
	}

	for _, tt := range []struct {
		env      map[string]string
		key, msg string
	}{
		{map[string]string{"TERMINAL_ENV": "modal"}, "TERMINAL_ENV",
			`environment variable TERMINAL_ENV is "modal", a terminal backend not available in hermes-wasm-exec: its API cannot be reached from here; use local, docker, ssh or exec (a command prefix such as ["kubectl","exec","-i","POD","--"]), or unset it to use terminal.backend of the config file; see docs/backends/`},
		{map[string]string{"TERMINAL_SSH_PORT": "ssh"}, "TERMINAL_SSH_PORT",
			`environment variable TERMINAL_SSH_PORT is "ssh", which is not a port number (between 1 and 65535); fix it, or unset it to use terminal.ssh_port of the config file`},
		{map[string]string{"TERMINAL_SSH_PORT": "70000"}, "TERMINAL_SSH_PORT", `environment variable TERMINAL_SSH_PORT is "70000", which is not a port number`},
		{map[string]string{"TERMINAL_SSH_HOST": "-oProxyCommand=x"}, "TERMINAL_SSH_HOST",
			`environment variable TERMINAL_SSH_HOST is "-oProxyCommand=x", which starts with "-", which ssh would take for an option; fix it, or unset it to use terminal.ssh_host of the config file`},
		{map[string]string{"TERMINAL_SSH_USER": "a b"}, "TERMINAL_SSH_USER", `environment variable TERMINAL_SSH_USER is "a b", which contains spaces`},
		{map[string]string{"TERMINAL_DOCKER_IMAGE": "-x"}, "TERMINAL_DOCKER_IMAGE", `environment variable TERMINAL_DOCKER_IMAGE is "-x", which starts with "-"`},
		{map[string]string{"TERMINAL_SSH_KEY": "~bob/k"}, "TERMINAL_SSH_KEY", `environment variable TERMINAL_SSH_KEY is "~bob/k", which starts with "~" but not "~/"`},
	} {
		_, err := load("terminal:\n  backend: local\n", tt.env)
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.HasPrefix(err.Error(), path+": "+tt.msg) {
			t.Errorf("%v:\n got  %v\n want %s: %s", tt.env, err, path, tt.msg)
		}
	}
}

// TestTerminalClientEnvAPIKeyEnv: terminal.client_env may not name the variable that holds the
// web search key (web.search.api_key_env), whatever its case.
func TestTerminalClientEnvAPIKeyEnv(t *testing.T) {
	for _, tt := range []struct{ in, msg string }{
		{"web: {search: {provider: brave, api_key_env: Search_Key}}\nterminal:\n  client_env: [HTTPS_PROXY, SEARCH_KEY]\n",
			`terminal.client_env[1] is "SEARCH_KEY", the variable web.search.api_key_env names: a credential the host manages, which never reaches a backend's client: remove it from the list`},
		{"terminal:\n  client_env: [SEARCH_KEY]\nweb: {search: {provider: tavily, api_key_env: SEARCH_KEY}}\n",
			`terminal.client_env[0] is "SEARCH_KEY", the variable web.search.api_key_env names`},
	} {
		_, err := Parse([]byte(tt.in), "config.yaml")
		var ce *Error
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Msg, tt.msg) || !strings.HasPrefix(ce.Key, "terminal.client_env[") {
			t.Errorf("%q: got %v, want %q", tt.in, err, tt.msg)
		}
	}
	// Another provider's key is no credential of this host's.
	if _, err := Parse([]byte("web: {search: {provider: tavily}}\nterminal:\n  client_env: [BRAVE_KEY_FOR_SOMETHING]\n"), "config.yaml"); err != nil {
		t.Errorf("an unrelated name: %v", err)
	}
}

// A TERMINAL_CWD that docker ignores leaves the variables after it applied.
func TestTerminalEnvAfterIgnoredCwd(t *testing.T) {
	p, err := parse([]byte("terminal:\n  backend: docker\n"), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TERMINAL_CWD": "/home/me/project", "TERMINAL_SSH_PORT": "2200", "TERMINAL_DOCKER_IMAGE": "debian:bookworm"}
	if err := p.terminalEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if tm := p.cfg.Terminal; tm.Cwd != "" || tm.SSHPort != 2200 || tm.DockerImage != "debian:bookworm" {
		t.Errorf("cwd %q, ssh_port %d, docker_image %q: want the cwd ignored and the rest applied", tm.Cwd, tm.SSHPort, tm.DockerImage)
	}
}
