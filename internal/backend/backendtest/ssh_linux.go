//go:build linux

package backendtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

const (
	// sshReady bounds sshd's start.
	sshReady = 15 * time.Second
	// sshGrace is the time between SIGTERM and SIGKILL for sshd.
	sshGrace = 5 * time.Second
	// sshPortTries is how many free ports sshd is given before its
	// start fails (another process may take a port between our check
	// and sshd's bind).
	sshPortTries = 3
)

var sshOnce once[*SSHServer]

// SSH returns the process-wide sshd on the loopback, starting it on first
// use.
func SSH(tb testing.TB) *SSHServer {
	tb.Helper()
	testenv.RealEngines(tb, "an sshd on the loopback")
	return sshOnce.get(tb, startSSH)
}

func startSSH() (*SSHServer, error) {
	watchSignals()
	paths, err := ensure("the SSH backend tests",
		tool{"sshd", "/usr/sbin/sshd", "openssh-server"},
		tool{"ssh", "/usr/bin/ssh", "openssh-client"},
		tool{"ssh-keygen", "/usr/bin/ssh-keygen", "openssh-client"})
	if err != nil {
		return nil, err
	}
	// sshd re-executes itself by its path, which must be absolute.
	sshd, err := filepath.Abs(paths["sshd"])
	if err != nil {
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("backendtest: who is the current user: %w", err)
	}
	dir, err := tempDir("hws-", "sshd.pid")
	if err != nil {
		return nil, err
	}
	hostKey, userKey := filepath.Join(dir, "host_ed25519_key"), filepath.Join(dir, "id_ed25519")
	for _, key := range []string{hostKey, userKey} {
		if _, err := command(stopCtx, nil, nil, paths["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-C", "backendtest", "-f", key); err != nil {
			return nil, fmt.Errorf("backendtest: %w", err)
		}
	}
	pub, err := os.ReadFile(userKey + ".pub")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation dir, which only a boot makes.
		if _, err := os.Stat("/run/sshd"); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "+ mkdir -p /run/sshd")
			if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
				return nil, err
			}
		}
	}
	s := &SSHServer{Host: "127.0.0.1", User: u.Username, KeyFile: userKey, KnownHostsFile: filepath.Join(dir, "known_hosts")}
	for try := 1; ; try++ {
		if s.Port, err = freePort(); err != nil {
			return nil, err
		}
		d, err := startSSHD(s, sshd, dir, hostKey, hostPub)
		if err == nil {
			if err = login(s, paths["ssh"], d); err == nil {
				return s, nil
			}
		}
		if d != nil {
			d.stop(sshGrace)
		}
		if d == nil || try == sshPortTries || !strings.Contains(fileTail(d.logPath, 10), "Address already in use") {
			return nil, err
		}
	}
}

// startSSHD writes sshd's config and the client's known_hosts for s.Port
// and starts sshd; it returns the daemon, if it started, with any
// failure.
func startSSHD(s *SSHServer, sshd, dir, hostKey string, hostPub []byte) (*daemon, error) {
	config := filepath.Join(dir, "sshd_config")
	lines := []string{
		fmt.Sprintf("Port %d", s.Port),
		"ListenAddress " + s.Host,
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"StrictModes no",
		"UsePAM no",
		// Tests may open many connections at once (and multiplex
		// sessions): the defaults (10) would drop some.
		"MaxStartups 200",
		"MaxSessions 200",
		"Subsystem sftp internal-sftp",
	}
	if err := os.WriteFile(config, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	known := fmt.Sprintf("[%s]:%d %s", s.Host, s.Port, hostPub)
	if err := os.WriteFile(s.KnownHostsFile, []byte(known), 0o600); err != nil {
		return nil, err
	}
	d, err := startDaemon("sshd", filepath.Join(dir, "sshd.log"),
		fmt.Sprintf("Server listening on %s port %d", s.Host, s.Port), nil, sshd, "-D", "-e", "-f", config)
	if err != nil {
		return nil, err
	}
	if !onStop(func() { d.stop(sshGrace) }) {
		return d, errStopping
	}
	return d, d.ready(sshReady)
}

// login checks that a real ssh login to s runs true.
func login(s *SSHServer, ssh string, d *daemon) error {
	_, err := command(stopCtx, nil, nil, ssh, append(s.ClientArgs(), "true")...)
	if err != nil {
		return fmt.Errorf("backendtest: sshd listens, but logging in fails: %w\nthe end of sshd's log (%s):\n%s", err, d.logPath, fileTail(d.logPath, 20))
	}
	return nil
}

// freePort is a TCP port of the loopback that nothing listened on a moment
// ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("backendtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
