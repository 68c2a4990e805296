package backend

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The ssh backend uses the system ssh client with one ControlMaster
// connection per backend, not golang.org/x/crypto/ssh: the user's ssh
// config, agent, known_hosts handling, ProxyJump and keys work as they do
// in a terminal, and a command over the master costs one channel open
// (RATIONALE.md).

// SSHOptions configures an ssh backend (terminal.ssh_*;
// docs/backends/ssh.md).
type SSHOptions struct {
	// CLI is the ssh client; empty means "ssh".
	CLI string
	// Host and User are required; Port defaults to 22.
	Host, User string
	Port       int
	// Key is an identity file; empty uses the client's defaults and agent.
	Key string
	// KnownHosts is the known_hosts file host keys are checked against;
	// empty means the client's default (~/.ssh/known_hosts). An unknown or
	// changed host key fails: keys are never accepted blindly.
	KnownHosts string
	// Cwd is the working dir on the host; empty or "~" means the login dir.
	Cwd string
	// Env is set in every command (shipped over stdin).
	Env []string
	// ControlDir holds the master connection's socket; empty means a new
	// private dir under the system temp dir.
	ControlDir string
}

type sshTransport struct {
	cli  string
	args []string // options and destination
}

func (t *sshTransport) command(ctx context.Context, argv []string) *exec.Cmd {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	args := append(append([]string{}, t.args...), "--", strings.Join(quoted, " "))
	c := exec.CommandContext(ctx, t.cli, args...)
	c.Env = clientEnv(nil)
	return c
}

// NewSSH connects (the master connection) and probes the host.
func NewSSH(ctx context.Context, opts SSHOptions) (Backend, error) {
	if opts.Host == "" || opts.User == "" {
		return nil, fmt.Errorf("the ssh backend needs terminal.ssh_host and terminal.ssh_user")
	}
	if opts.CLI == "" {
		opts.CLI = "ssh"
	}
	if opts.Port == 0 {
		opts.Port = 22
	}
	if opts.Cwd == "" {
		opts.Cwd = "~"
	}
	cli, err := exec.LookPath(opts.CLI)
	if err != nil {
		return nil, fmt.Errorf("the ssh backend needs an ssh client (%s) on PATH: install OpenSSH's client (Debian: apt-get install openssh-client): %w", opts.CLI, err)
	}
	dir := opts.ControlDir
	own := dir == ""
	if own {
		if dir, err = os.MkdirTemp("", "hermes-ssh-"); err != nil {
			return nil, err
		}
	}
	ctl := filepath.Join(dir, "ctl")
	common := []string{"-T", "-e", "none", "-p", strconv.Itoa(opts.Port),
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR",
		"-o", "ControlPath=" + ctl, "-o", "ServerAliveInterval=15"}
	if opts.KnownHosts != "" {
		common = append(common, "-o", "UserKnownHostsFile="+opts.KnownHosts, "-o", "GlobalKnownHostsFile=/dev/null")
	}
	if opts.Key != "" {
		common = append(common, "-i", opts.Key, "-o", "IdentitiesOnly=yes")
	}
	dest := opts.User + "@" + opts.Host
	// The master: -f returns once authenticated; ControlPersist bounds how
	// long it outlives this process if Close is never called.
	master := exec.CommandContext(ctx, cli, append(append([]string{"-M", "-N", "-f", "-o", "ControlPersist=600"}, common...), dest)...)
	master.Env = clientEnv(nil)
	var errb bytes.Buffer
	master.Stderr = &errb
	master.WaitDelay = time.Second
	if err := master.Run(); err != nil {
		if own {
			os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("the ssh backend could not connect to %s port %d: %s", dest, opts.Port, sshError(errb.String(), err))
	}
	target := fmt.Sprintf("%s:%d", dest, opts.Port)
	r := &remote{name: "ssh", target: target, cwd: opts.Cwd, extraEnv: opts.Env,
		tr: &sshTransport{cli: cli, args: append(append([]string{"-o", "ControlMaster=no"}, common...), dest)}}
	r.onClose = func() error {
		c := exec.Command(cli, append(append([]string{"-O", "exit"}, common...), dest)...)
		c.Env = clientEnv(nil)
		c.WaitDelay = time.Second
		err := c.Run()
		if own {
			os.RemoveAll(dir)
		}
		if err != nil {
			return fmt.Errorf("closing the ssh connection to %s: %w", target, err)
		}
		return nil
	}
	if err := r.probe(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// sshError explains a failed connection.
func sshError(stderr string, err error) string {
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = err.Error()
	}
	if strings.Contains(msg, "Host key verification failed") || strings.Contains(msg, "No ED25519 host key is known") ||
		strings.Contains(msg, "host key is known") {
		msg += " (the host's key must be in known_hosts: connect once with ssh and check its fingerprint, or set terminal.ssh_known_hosts)"
	}
	return msg
}
