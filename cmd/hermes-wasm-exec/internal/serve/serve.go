// Package serve is `hermes-wasm-exec serve`: a long-lived executor behind
// JSON-RPC 2.0, one JSON object per line, on stdin/stdout or on a Unix
// socket or loopback TCP port that several clients share (docs/serve.md is
// the protocol). Here are the product's methods (execute, open_session,
// register_skill, describe, interrupt, close_session, shutdown) and the
// approve and tool_call requests an execute sends its client; an execute
// takes its session's place in the executor's queue (runtime/executor)
// before its handler returns, so a client's order is kept. serve keeps no
// session state: open_session registers the connection's delegated tools
// on the executor's session (executor.Executor.OpenSession), and
// close_session and a connection's end remove them there. The framing,
// authentication, replies and pending requests are the jsonrpc package's.
//
// It imports runtime/executor, config, hostfuncs (the tool names), native
// (the transport names) and the command's cli and jsonrpc packages; only
// the command imports it.
package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/listen"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// maxRPCLine bounds one line (one JSON-RPC message, its newline not
// counted) of a client that needs no authentication or has authenticated:
// a script is at most cli.MaxScript, and JSON escaping can double it. A
// longer line gets an error and is skipped, never held whole.
const maxRPCLine = 64 << 20

// Command is `serve`'s help and flags.
var Command = &cli.Command{
	Name: "serve",
	Summary: `Serves execute, open_session, register_skill, describe, interrupt, fork_session and
close_session over JSON-RPC 2.0, one JSON object per line, on stdin/stdout or on a
listener. Session kernels persist between calls. docs/serve.md has the protocol.`,
	Order: []string{"listen", "token-file", "auth-timeout", "max-unauthenticated", "config", "sandbox", "log-level", "rpc-transport"},
	Examples: []string{
		`printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"execute","params":{"code":"print(6 * 7)","mode":"strict"}}' | hermes-wasm-exec serve`,
		"hermes-wasm-exec serve --listen unix:/tmp/hermes.sock",
	},
}

// Main runs `serve` with the arguments after the command name, and returns
// the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stderr = &cli.LockedWriter{W: stderr}
	c := Command
	fs := c.FlagSet()
	listenAt := fs.String("listen", "", "`unix:PATH|tcp:127.0.0.1:PORT` serve clients on a Unix socket (0600) or on loopback TCP (PORT 0: any free port; each connection must first call authenticate with the token) instead of stdin/stdout")
	tokenFile := fs.String("token-file", "", "`FILE` with tcp and no $HERMES_SERVE_TOKEN: the token is read from FILE (the user's own, mode 0600, not a symlink), or generated and written there when FILE does not exist. With neither, a token is generated into a private temp dir, whose path (never the token) is printed on stderr")
	cfgPath := fs.String("config", "", "`FILE` config file (default: $HERMES_HOME/config.yaml)")
	var sandbox, transport string
	logLevel := "info"
	fs.Var(cli.EnumFlag{V: &sandbox, Allowed: []string{config.SandboxNone, config.SandboxWasm}}, "sandbox", "`none|wasm` as for run (default: code_execution.sandbox)")
	fs.Var(cli.EnumFlag{V: &logLevel, Allowed: []string{"info", "debug"}}, "log-level", "`info|debug` logs on stderr (default info)")
	fs.Var(cli.EnumFlag{V: &transport, Allowed: []string{native.TransportUnix, native.TransportTCP}}, "rpc-transport", "`unix|tcp` project mode's tool channel (default: unix; tcp on Windows)")
	authTimeout := config.DefaultAuthTimeout
	fs.Var(cli.DurationFlag{D: &authTimeout}, "auth-timeout", "`DURATION` with tcp: a connection that has not authenticated within it is closed; seconds or a duration (10, 10s); 0: no limit (default "+config.DefaultAuthTimeout.String()+")")
	maxUnauth := config.DefaultMaxUnauthenticated
	fs.Var(cli.IntFlag{N: &maxUnauth, Min: 0}, "max-unauthenticated", "`N` with tcp: connections not yet authenticated that may be open at a time; one more is closed at once; 0: no cap (default "+strconv.Itoa(config.DefaultMaxUnauthenticated)+")")
	pos, code, ok := c.Parse(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if code := c.NoArgs(pos, stderr); code != cli.ExitOK {
		return code
	}
	fail := func(format string, a ...any) int { return c.Fail(stderr, format, a...) }
	network, address := "", ""
	if *listenAt != "" {
		var ok bool
		network, address, ok = strings.Cut(*listenAt, ":")
		switch {
		case !ok || address == "" || (network != "unix" && network != "tcp"):
			return fail("--listen must be unix:PATH or tcp:127.0.0.1:PORT, not %q", *listenAt)
		case network == "tcp":
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return fail("--listen %q: %v", *listenAt, err)
			}
			if host == "localhost" {
				host = "127.0.0.1"
				address = net.JoinHostPort(host, port)
			}
			if !cli.IsLoopbackHost(host) {
				return fail("--listen %q: only loopback addresses (127.0.0.1, ::1) are allowed: serve runs code and must not be reachable from the network", *listenAt)
			}
		}
	}
	if *tokenFile != "" && network != "tcp" {
		return fail("--token-file goes with --listen tcp:... (a Unix socket is owner-only, 0600: that is its authentication; stdin/stdout is the client's own)")
	}
	// A TCP listener always has a token: given, read or generated.
	var token *listen.Token
	if network == "tcp" {
		var err error
		if token, err = listen.ResolveToken(*tokenFile); err != nil {
			return fail("%v", err)
		}
		defer token.Close()
	}
	cfg, ok := cli.LoadConfig(*cfgPath, stderr, logLevel)
	if !ok || !cli.ApplySandbox("serve", sandbox, &cfg, stderr) {
		return cli.ExitUsage
	}

	logf := cli.DebugLogf(logLevel, stderr)
	infof := func(format string, a ...any) { fmt.Fprintf(stderr, "hermes-wasm-exec serve: "+format+"\n", a...) }

	var ln net.Listener
	if network != "" {
		var err error
		ln, err = listen.Listen(network, address)
		if err != nil {
			infof("%v", err)
			return cli.ExitFailed
		}
		defer ln.Close()
		if network == "tcp" {
			ln = listen.Gated(ln, maxUnauth, infof)
		}
	}

	// The token file, given or generated, is the executor's state: no run
	// may rewrite it.
	var statePaths []string
	if token != nil && token.File != "" {
		statePaths = append(statePaths, token.File)
	}
	ex := executor.New(executor.Options{Config: &cfg, Logger: cli.ExecutorLogger(logLevel, stderr), Progress: stderr, RPCTransport: transport,
		StatePaths: statePaths})
	s := newServer(executorBackend{ex}, logf, infof)
	if token != nil {
		s.token = token.Value
	}
	s.authTimeout = authTimeout
	s.cfg = cfg
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	defer cli.CatchSIGPIPE()()
	ex.StartWarmPool(s.ctx)

	var stdioDone, clientGone <-chan struct{}
	switch {
	case ln == nil:
		infof("serving JSON-RPC 2.0 on stdin/stdout, one JSON object per line")
		c := s.newClient(stdin, stdout, nil, false)
		done := make(chan struct{})
		stdioDone, clientGone = done, c.conn.Gone()
		go func() {
			c.serve()
			close(done)
		}()
		// The calls in flight still answer after stdin's end, as long as
		// somebody reads stdout: once nobody does, the client is gone.
		watched := make(chan struct{})
		defer close(watched)
		go func() {
			if cli.ReaderGone(stdout, watched) {
				c.conn.Lost()
			}
		}()
	default:
		where := network + ":" + ln.Addr().String()
		if token != nil {
			infof("listening on %s (each connection calls authenticate first, within %v, with %s)", where, authTimeout, token.Where())
		} else {
			infof("listening on %s (owner-only socket)", where)
		}
		go s.accept(ln, network == "tcp")
	}
	select {
	case <-s.shutdownReq:
		logf("serve: shutdown requested")
	case <-stdioDone:
		logf("serve: stdin closed")
	case <-clientGone:
		infof("the client is gone (nobody reads stdout any more): interrupting the running calls and shutting down")
	case sig := <-sigs:
		infof("%v: shutting down", sig)
	}
	if ln != nil {
		ln.Close()
	}
	s.stop()
	// Bounded: a delegated tool that ignores its context must not hang the exit.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 30*time.Second)
	ex.Close(closeCtx)
	cancelClose()
	return cli.ExitOK
}
