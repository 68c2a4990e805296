// Package backendtest starts real remote terminal backends for tests: a
// private Docker engine and an sshd on the loopback, each at most once per
// test process, both stopped when the tests end.
//
// A package that uses it runs its tests through [Main]:
//
//	func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }
//
// and a test asks for an engine with [Docker] or [SSH]. The first call
// starts it; later and concurrent calls get the same one, or the same
// failure. In `make check`'s tier (internal/testenv.RealEngines) they,
// and [Program], skip the test with a line naming `make test`; in the full
// tier nothing is ever skipped: a missing program is installed
// (as root, with apt-get install -y --no-install-recommends, each command
// printed to stderr as "+ apt-get ..." before it runs), and when it cannot
// be (not root, no apt-get, no network) the test fails saying what to
// install or run.
//
// # Docker
//
// [Docker] starts a private dockerd (Debian's docker.io) that changes
// nothing of the machine's network and shares nothing with a system
// daemon: no iptables rules, no bridge, no IP forwarding, its own data
// root, exec root (and so its own containerd), socket, pid file and
// configuration file, all under a fresh temp dir (hwd-*, short, because a
// Unix socket path is limited to 108 bytes); its log goes to dockerd.log
// there. It is ready when it logs that its API listens (at most 60 s;
// the failure shows the log's tail). The test image, [DockerEngine.Image],
// is a Debian bookworm minbase with python3 (the full standard library:
// project mode needs json, which python3-minimal lacks), built without any
// registry: debootstrap (installed if missing, about 35 s) makes the root
// file system once per machine, cached as a tarball in
// ~/.cache/hermes-wasm-exec/ (written to a temp file, then renamed, so a
// half-written cache never exists; test processes building it at once
// take turns on a file lock), and each daemon imports it (about 2 s).
// The engine has no network for containers: start them with
// --network none. The docker CLI reaches the daemon through
// DOCKER_HOST=[DockerEngine.Host], which [DockerEngine.Env] holds.
//
// # SSH
//
// [SSH] starts sshd -D -e (Debian's openssh-server; the client is
// openssh-client) on 127.0.0.1 at a free port, with a host key and a user
// key made for it in a temp dir (hws-*): public key logins only, for the
// current user, no PAM, no ssh_config or environment accepted from the
// client. The remote side is this machine, so its python3 is the host's.
// It is ready once it logs that it listens and a real ssh login ran
// true; [SSHServer.ClientArgs] are the ssh options that log in.
//
// # Stopping
//
// When the tests end, or the test process gets SIGINT or SIGTERM (it then
// stops everything and dies of the signal), every container of the
// private daemon is removed, dockerd is stopped (SIGTERM, SIGKILL after
// 20 s), whatever it left mounted under its temp dir is unmounted and the
// dir removed; sshd is stopped and its dir removed. Both daemons run as
// process trees of internal/proctree, which get SIGKILL if the test
// process dies unannounced (a panic, a -timeout); that leaves only their
// temp dirs, which the next start of an engine removes. The daemons and
// every command run here (apt-get, debootstrap, the docker CLI) go
// through proctree so that a test process that made itself a child
// subreaper does not take them for orphans to kill; a test that runs the
// docker or ssh CLI itself in such a process must do the same.
//
// Linux only: elsewhere [Docker] and [SSH] fail the test.
package backendtest

import "strconv"

// DockerEngine is the private Docker daemon of the test process.
type DockerEngine struct {
	// Host is the daemon's address: "unix://" and its socket's path.
	Host string
	// Image is the test image, a Debian bookworm with python3 (no
	// network needed to use it: run containers with --network none).
	Image string
	// Env holds DOCKER_HOST=Host, to append to a docker CLI's
	// environment.
	Env []string
	// Docker is the path of the docker CLI.
	Docker string
}

// SSHServer is the sshd of the test process, listening on the loopback.
type SSHServer struct {
	// Host is the address it listens on, "127.0.0.1".
	Host string
	// Port is its TCP port.
	Port int
	// User is the account that logs in: the current user.
	User string
	// KeyFile is the private key that logs in as User.
	KeyFile string
	// KnownHostsFile holds the server's host key, for
	// StrictHostKeyChecking=yes.
	KnownHostsFile string
}

// ClientArgs are the arguments of ssh that log in to s as s.User, with
// s.KeyFile only, checking the host key against s.KnownHostsFile and
// reading no ssh_config; they end with the destination, so a command
// follows them.
func (s *SSHServer) ClientArgs() []string {
	return []string{
		"-F", "none",
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + s.KnownHostsFile,
		"-o", "IdentitiesOnly=yes",
		"-i", s.KeyFile,
		"-p", strconv.Itoa(s.Port),
		s.User + "@" + s.Host,
	}
}
