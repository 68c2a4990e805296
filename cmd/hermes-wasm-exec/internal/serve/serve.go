// Package serve is `hermes-wasm-exec serve`: a long-lived executor behind
// JSON-RPC 2.0, one JSON object per line, on stdin/stdout or on a Unix
// socket or loopback TCP port that several clients share (docs/serve.md is
// the protocol). Here are the product's methods (execute, open_session,
// register_skill, describe, interrupt, close_session, shutdown), the
// per-session FIFO of execute calls, and the approve and tool_call requests
// an execute sends its client; the framing, authentication, replies and
// pending requests are the jsonrpc package's.
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
	"strings"
	"syscall"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/native"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// tokenEnv holds the token TCP clients must authenticate with; when it is
// unset, serve generates one and writes it to --token-file.
const tokenEnv = cli.TokenEnv

// maxRPCLine bounds one line (one JSON-RPC message, its newline not
// counted) of a client that needs no authentication or has authenticated:
// a script is at most cli.MaxScript, and JSON escaping can double it. A
// longer line gets an error and is skipped, never held whole.
const maxRPCLine = 64 << 20

// Main runs `serve` with the arguments after the command name, and returns
// the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stderr = &cli.LockedWriter{W: stderr}
	fs := cli.NewFlagSet("serve", stderr)
	listen := fs.String("listen", "", "")
	tokenFile := fs.String("token-file", "", "")
	cfgPath := fs.String("config", "", "")
	logLevel := fs.String("log-level", "info", "")
	transport := fs.String("rpc-transport", "", "")
	fail := cli.Failer("serve", stderr)
	if !cli.ParseServerFlags(fs, args, logLevel, fail) {
		return cli.ExitUsage
	}
	if *transport != "" && *transport != native.TransportUnix && *transport != native.TransportTCP {
		return fail("--rpc-transport must be unix or tcp, not %q", *transport)
	}
	network, address := "", ""
	if *listen != "" {
		var ok bool
		network, address, ok = strings.Cut(*listen, ":")
		switch {
		case !ok || address == "" || (network != "unix" && network != "tcp"):
			return fail("--listen must be unix:PATH or tcp:127.0.0.1:PORT, not %q", *listen)
		case network == "tcp":
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return fail("--listen %q: %v", *listen, err)
			}
			if host == "localhost" {
				host = "127.0.0.1"
				address = net.JoinHostPort(host, port)
			}
			if !cli.IsLoopbackHost(host) {
				return fail("--listen %q: only loopback addresses (127.0.0.1, ::1) are allowed: serve runs code and must not be reachable from the network", *listen)
			}
		}
	}
	token := ""
	if network == "tcp" {
		token = os.Getenv(tokenEnv)
		if token == "" && *tokenFile == "" {
			return fail("--listen tcp:... needs a token: set %s, or give --token-file FILE to have one generated and written there", tokenEnv)
		}
	}
	cfg, ok := cli.LoadConfig(*cfgPath, stderr, *logLevel)
	if !ok {
		return cli.ExitUsage
	}

	logf := cli.DebugLogf(*logLevel, stderr)
	infof := func(format string, a ...any) { fmt.Fprintf(stderr, "hermes-wasm-exec serve: "+format+"\n", a...) }

	var ln net.Listener
	generated := false
	if network != "" {
		if network == "tcp" && token == "" {
			var err error
			if token, err = cli.NewToken(); err != nil {
				infof("cannot generate a token: %v", err)
				return cli.ExitFailed
			}
			if err := cli.WriteTokenFile(*tokenFile, token); err != nil {
				infof("%v", err)
				return cli.ExitFailed
			}
			generated = true
			defer os.Remove(*tokenFile)
		}
		var err error
		ln, err = listenOn(network, address)
		if err != nil {
			infof("%v", err)
			return cli.ExitFailed
		}
		defer ln.Close()
		if network == "unix" {
			defer os.Remove(address)
		}
	}

	ex := executor.New(executor.Options{Config: &cfg, Logf: logf, Warnf: cli.WarnLogf(stderr), Progress: stderr, RPCTransport: *transport,
		StatePaths: []string{*tokenFile}})
	s := newServer(executorBackend{ex}, logf, infof)
	s.token = token
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
		switch {
		case network == "tcp" && generated:
			infof("listening on %s (call authenticate first: the token is in %s)", where, *tokenFile)
		case network == "tcp":
			infof("listening on %s (call authenticate first with the token from %s)", where, tokenEnv)
		default:
			infof("listening on %s", where)
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

// listenOn listens on a Unix socket (0600; a stale socket file left by a
// dead server is replaced) or a loopback TCP address.
func listenOn(network, address string) (net.Listener, error) {
	if network == "unix" {
		if fi, err := os.Lstat(address); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				return nil, fmt.Errorf("%s exists and is not a socket", address)
			}
			if c, err := net.DialTimeout("unix", address, time.Second); err == nil {
				c.Close()
				return nil, fmt.Errorf("%s is in use by a running server", address)
			}
			os.Remove(address)
		}
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s:%s: %w", network, address, err)
	}
	if network == "unix" {
		if err := os.Chmod(address, 0o600); err != nil {
			ln.Close()
			return nil, fmt.Errorf("cannot restrict %s to its owner: %w", address, err)
		}
	}
	return ln, nil
}
