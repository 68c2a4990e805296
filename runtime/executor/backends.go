package executor

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/backend"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// The remote backends (terminal.backend other than local): a docker
// backend per session (one container each, on the session), one ssh or
// exec backend for every session (on the session table). A backend is made
// on first use and closed with its session (docker) or the executor.

// backendEntry is a backend being made, or made.
type backendEntry struct {
	ready chan struct{} // closed once be or err is set
	be    backend.Backend
	err   error
}

// close closes the backend once it is made (docker: its container is
// removed unless container_persistent).
func (en *backendEntry) close() {
	<-en.ready
	if en.be != nil {
		en.be.Close()
	}
}

// newBackend makes the configured backend for session.
func (e *Executor) newBackend(ctx context.Context, session string) (backend.Backend, error) {
	t := e.cfg.Terminal
	switch t.Backend {
	case config.BackendDocker:
		// docker_env, then the forwarded variables' values from this
		// process's environment (an unset one is skipped): they travel over
		// each command's stdin, never on a command line.
		env := make([]string, 0, len(t.DockerEnv)+len(t.DockerForwardEnv))
		for _, k := range slices.Sorted(maps.Keys(t.DockerEnv)) {
			env = append(env, k+"="+t.DockerEnv[k])
		}
		for _, k := range t.DockerForwardEnv {
			if v := e.getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
		return backend.NewDocker(ctx, backend.DockerOptions{
			ClientEnv:  e.clientEnv,
			Image:      t.DockerImage,
			Network:    t.DockerNetwork,
			Volumes:    t.DockerVolumes,
			Env:        env,
			ExtraArgs:  t.DockerExtraArgs,
			CPU:        t.ContainerCPU,
			MemoryMB:   t.ContainerMemoryMB,
			Persistent: t.ContainerPersistent,
			Cwd:        t.RemoteCwd(),
			Session:    session,
		})
	case config.BackendSSH:
		return backend.NewSSH(ctx, backend.SSHOptions{
			Host: t.SSHHost, User: t.SSHUser, Port: t.SSHPort, Key: t.SSHKey,
			KnownHosts: t.SSHKnownHosts, Cwd: t.RemoteCwd(),
			ClientEnv: e.clientEnv,
		})
	case config.BackendExec:
		return backend.NewExec(ctx, backend.ExecOptions{Prefix: t.ExecCommand, Cwd: t.RemoteCwd(), ClientEnv: e.clientEnv})
	}
	return nil, fmt.Errorf("terminal.backend %q is not available: use %s", t.Backend, strings.Join(config.Backends, ", "))
}

// newClientEnv is the environment of every remote backend's client
// (engine.ClientEnv: config.ClientEnvNames, config.ClientEnvPrefixes and
// terminal.client_env, never a host-managed credential), built once from
// the executor's environment. Names of terminal.client_env that are
// host-managed credentials (a Config built in code: config.Load refuses
// them) are dropped, with a warning.
func (e *Executor) newClientEnv() []string {
	opts := engine.ClientEnvOptions{Extra: e.cfg.Terminal.ClientEnv, Windows: goruntime.GOOS == "windows"}
	if v := e.cfg.Web.Search.APIKeyEnv; v != "" {
		opts.Managed = []string{v}
	}
	if refused := engine.RefusedPassthrough(opts.Extra, opts.Managed...); len(refused) > 0 {
		e.log.Log(context.Background(), slog.LevelWarn, "passthrough refused",
			"names", refused, "source", "terminal.client_env")
	}
	return engine.ClientEnv(e.environ, opts)
}
