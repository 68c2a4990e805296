package backend

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// ExecOptions configures an exec backend: any target reached by a command
// prefix that runs its arguments there with stdin, stdout and stderr
// connected (kubectl exec -i POD --, podman exec -i CTR, docker exec -i
// CTR, ...; docs/backends/exec.md).
type ExecOptions struct {
	// Prefix is the argv prefix (terminal.exec_command).
	Prefix []string
	// Cwd is the working dir in the target; empty means where the prefix
	// starts commands.
	Cwd string
	// Env is set in every command (shipped over stdin).
	Env []string
	// ClientEnv is the prefix command's whole environment (PATH, HOME,
	// KUBECONFIG, ...: engine.ClientEnv builds it); nil means an empty
	// one. The prefix never gets this process's environment; one that
	// passes its environment on (env, setpriv) hands this one to the
	// target.
	ClientEnv []string
}

type prefixTransport struct {
	prefix    []string
	clientEnv []string
}

func (t *prefixTransport) command(ctx context.Context, argv []string) *exec.Cmd {
	c := exec.CommandContext(ctx, t.prefix[0], append(append([]string{}, t.prefix[1:]...), argv...)...)
	c.Env = clientEnv(t.clientEnv)
	return c
}

// NewExec returns an exec backend, probed.
func NewExec(ctx context.Context, opts ExecOptions) (Backend, error) {
	if len(opts.Prefix) == 0 || opts.Prefix[0] == "" {
		return nil, fmt.Errorf("the exec backend needs terminal.exec_command, the argv prefix that runs a command in the target (for example [\"kubectl\", \"exec\", \"-i\", \"POD\", \"--\"])")
	}
	if _, err := exec.LookPath(opts.Prefix[0]); err != nil {
		return nil, fmt.Errorf("the exec backend's command %s is not on PATH: %w", opts.Prefix[0], err)
	}
	r := &remote{name: "exec", target: strings.Join(opts.Prefix, " "), cwd: opts.Cwd, extraEnv: opts.Env,
		tr: &prefixTransport{prefix: append([]string{}, opts.Prefix...), clientEnv: opts.ClientEnv}}
	if err := r.probe(ctx); err != nil {
		return nil, err
	}
	return r, nil
}
