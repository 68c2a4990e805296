package backend

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
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
	// ClientEnv is the whole environment of the client and its master
	// (PATH, HOME, SSH_AUTH_SOCK, ...: engine.ClientEnv builds it); nil
	// means an empty one. The client never gets this process's
	// environment.
	ClientEnv []string
	// ControlDir holds the master connection's socket; empty means a new
	// private dir under the system temp dir.
	ControlDir string
}

type sshTransport struct {
	cli       string
	args      []string // options and destination
	clientEnv []string
}

func (t *sshTransport) command(ctx context.Context, argv []string) *exec.Cmd {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	args := append(append([]string{}, t.args...), "--", strings.Join(quoted, " "))
	c := exec.CommandContext(ctx, t.cli, args...)
	c.Env = clientEnv(t.clientEnv)
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
		opts.Port = config.DefaultSSHPort
	}
	if opts.Cwd == "" {
		opts.Cwd = config.DefaultSSHCwd
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
	cleanupDir := func() {
		if own {
			os.RemoveAll(dir)
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
	// The master runs in the foreground as a child of ours (in a tree
	// registered with proctree, so an executor reaping orphans leaves it
	// alone); its LocalCommand says when it is connected and authenticated.
	master := exec.Command(cli, append(append([]string{"-M", "-N", "-o", "ControlPersist=no",
		"-o", "PermitLocalCommand=yes", "-o", "LocalCommand=echo " + sshReady}, common...), dest)...)
	master.Env = clientEnv(opts.ClientEnv)
	var errb bytes.Buffer
	master.Stderr = &errb
	out, err := master.StdoutPipe()
	if err != nil {
		cleanupDir()
		return nil, err
	}
	tree, err := proctree.Start(master)
	if err != nil {
		cleanupDir()
		return nil, fmt.Errorf("starting %s: %w", cli, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == sshReady {
				ok = true
				break
			}
		}
		ready <- ok
		io.Copy(io.Discard, out)
	}()
	exited := make(chan error, 1)
	go func() {
		werr := tree.Wait()
		tree.Release()
		exited <- werr
	}()
	fail := func(msg string) (Backend, error) {
		tree.Kill()
		cleanupDir()
		return nil, fmt.Errorf("the ssh backend could not connect to %s port %d: %s", dest, opts.Port, msg)
	}
	select {
	case ok := <-ready:
		if !ok {
			werr := <-exited
			return fail(sshError(errb.String(), werr))
		}
	case <-ctx.Done():
		return fail(context.Cause(ctx).Error())
	}
	target := fmt.Sprintf("%s:%d", dest, opts.Port)
	r := &remote{name: "ssh", target: target, cwd: opts.Cwd, extraEnv: opts.Env,
		tr: &sshTransport{cli: cli, args: append(append([]string{"-o", "ControlMaster=no"}, common...), dest), clientEnv: opts.ClientEnv}}
	r.onClose = func() error {
		// The master ends when asked; killed if it does not.
		c := exec.Command(cli, append(append([]string{"-O", "exit"}, common...), dest)...)
		c.Env = clientEnv(opts.ClientEnv)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		proctree.Run(ctx, c)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			tree.Kill()
			<-exited
		}
		cleanupDir()
		return nil
	}
	if err := r.probe(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// sshReady is what the master's LocalCommand prints once connected.
const sshReady = "hermes-ssh-master-ready"

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
