package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore/s3test"
)

// haproxyConfig is the session-affinity recipe of docs/service.md: round
// robin for new sessions, then every request carrying an Mcp-Session-Id
// goes to the replica whose response issued it; replicas whose /readyz
// fails (starting, draining) get no new sessions. The checks tolerate a
// loaded machine: a replica slow to answer /readyz (up to 5 s) is not
// marked down, nor one that misses one or two checks (fall 3); with
// "inter 100ms fall 1" and no "timeout check" (the check then times out
// after inter), a replica busy for 100 ms was marked down, and with every
// replica down haproxy answered 503. A killed replica refuses connections
// at once, so it is still down after three checks, within a second; until
// then its requests are retried and redispatched (retries 2).
func haproxyConfig(port int, replicas []*httpMCP) string {
	var b strings.Builder
	fmt.Fprintf(&b, `defaults
    mode http
    timeout connect 2s
    timeout client 5m
    timeout server 5m
    option redispatch
    retries 2

frontend mcp
    bind 127.0.0.1:%d
    default_backend replicas

backend replicas
    balance roundrobin
    stick-table type string len 128 size 100k expire 30m
    stick match req.hdr(Mcp-Session-Id)
    stick store-response res.hdr(Mcp-Session-Id)
    option httpchk GET /readyz
    http-check expect status 200
    timeout check 5s
    default-server inter 250ms fall 3 rise 2
`, port)
	for i, r := range replicas {
		fmt.Fprintf(&b, "    server r%d %s check\n", i, strings.TrimPrefix(r.base, "http://"))
	}
	return b.String()
}

// startProxy starts haproxy with haproxyConfig in front of replicas, and
// returns once it answers /readyz; it is stopped when t ends.
func startProxy(t *testing.T, haproxy string, replicas []*httpMCP) *httpMCP {
	t.Helper()
	port := freePort(t)
	conf := filepath.Join(t.TempDir(), "haproxy.cfg")
	require.NoError(t, os.WriteFile(conf, []byte(haproxyConfig(port, replicas)), 0o600))
	var hlog syncBuffer
	hp := exec.Command(haproxy, "-f", conf, "-db")
	hp.Stdout, hp.Stderr = &hlog, &hlog
	require.NoError(t, hp.Start())
	t.Cleanup(func() {
		_ = hp.Process.Kill()
		_ = hp.Wait()
	})
	proxy := &httpMCP{base: fmt.Sprintf("http://127.0.0.1:%d", port), client: http.DefaultClient, stderr: &hlog}
	pollUntil(t, time.Minute, func() bool {
		resp, err := http.Get(proxy.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "haproxy is not up: " + hlog.String() })
	return proxy
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// replicaSession is one client session through the proxy, and the replica
// serving it (each replica's working dir names it in replica.txt).
type replicaSession struct {
	cs      *mcp.ClientSession
	replica string
	count   int
	errors  []string // the replica each error came from
}

// TestMCPHTTPReplicas: three `mcp --http` replicas behind HAProxy with the
// stickiness recipe; 8 sessions x 30 calls keep their kernel state. One
// replica is killed mid-run: its sessions get a clean error, start again
// on another replica and go on; the others never notice. Then one is
// drained with SIGTERM while a call runs in every session: none is lost.
func TestMCPHTTPReplicas(t *testing.T) {
	haproxy := backendtest.Program(t, "haproxy", "/usr/sbin/haproxy", "haproxy")
	replicas := make([]*httpMCP, 3)
	for i := range replicas {
		replicas[i] = startHTTPMCP(t, nil, "--drain-timeout", "2m")
		require.NoError(t, os.WriteFile(filepath.Join(replicas[i].workdir, "replica.txt"), []byte(fmt.Sprint("r", i)), 0o644))
	}
	for _, r := range replicas {
		r.waitReady(t)
	}
	proxy := startProxy(t, haproxy, replicas)

	connect := func(s *replicaSession) {
		cs, err := proxy.session(t, testHTTPToken)
		require.NoError(t, err)
		s.cs = cs
		text, _, isErr := callCode(t, cs, map[string]any{"code": fmt.Sprintf("from hermes_tools import read_file\nreplica = read_file('replica.txt')['content'].split('|')[-1].strip()\ncount = %d\nprint(replica)", s.count)})
		require.False(t, isErr, text)
		s.replica = strings.TrimSpace(text)
	}
	// call runs one counted call; a failure (the replica went away) starts
	// the session again through the proxy, with the count it had, and
	// repeats the call there.
	call := func(s *replicaSession, code string) {
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"code": code}})
			cancel()
			if err == nil && !res.IsError {
				want := fmt.Sprintf("%s %d\n", s.replica, s.count+1)
				require.Equal(t, want, res.Content[0].(*mcp.TextContent).Text)
				s.count++
				return
			}
			msg := fmt.Sprint(err)
			if res != nil && len(res.Content) > 0 {
				msg = res.Content[0].(*mcp.TextContent).Text
			}
			s.errors = append(s.errors, s.replica+": "+msg)
			s.cs.Close()
			connect(s)
		}
		t.Fatalf("a call failed three times: %v", s.errors)
	}
	const counted = "count += 1\nprint(replica, count)"
	sessions := make([]*replicaSession, 8)
	for i := range sessions {
		sessions[i] = &replicaSession{}
		connect(sessions[i])
		t.Cleanup(func() { sessions[i].cs.Close() })
	}
	phase := func(code func(i int) string, from, to int) {
		var wg sync.WaitGroup
		for i, s := range sessions {
			wg.Go(func() {
				for range to - from {
					call(s, code(i))
				}
			})
		}
		wg.Wait()
	}
	on := func(replica string) (n int) {
		for _, s := range sessions {
			if s.replica == replica {
				n++
			}
		}
		return n
	}
	plain := func(int) string { return counted }

	// Calls 1-10 on three replicas; every replica serves some session.
	phase(plain, 0, 10)
	for i := range replicas {
		require.Positive(t, on(fmt.Sprint("r", i)), "round robin spreads the sessions: %v", func() (r []string) {
			for _, s := range sessions {
				r = append(r, s.replica)
			}
			return r
		}())
	}
	// r0 dies: its sessions start again elsewhere, the others go on.
	killed := on("r0")
	require.NoError(t, replicas[0].cmd.Process.Kill())
	<-replicas[0].exited
	phase(plain, 10, 20)
	errs := 0
	for _, s := range sessions {
		errs += len(s.errors)
		for _, e := range s.errors {
			require.True(t, strings.HasPrefix(e, "r0: "), "only r0's sessions saw an error: %s", e)
		}
	}
	require.Equal(t, killed, errs, "each of r0's sessions saw one error")

	// r1 is drained while every session has a call running: every call
	// finishes; then r1's sessions start again on r2.
	drained := on("r1")
	require.Positive(t, drained)
	waiting := func(i int) string {
		return fmt.Sprintf(`from hermes_tools import write_file, read_file
import time
write_file('started-%d.txt', 'x')
while read_file('go.txt').get('error'):
    time.sleep(0.02)
`, i) + counted
	}
	var wg sync.WaitGroup
	wg.Go(func() { phase(waiting, 20, 21) })
	for i, s := range sessions {
		waitFile(t, filepath.Join(replicas[map[string]int{"r1": 1, "r2": 2}[s.replica]].workdir, fmt.Sprintf("started-%d.txt", i)), replicas[1])
	}
	require.NoError(t, replicas[1].cmd.Process.Signal(syscall.SIGTERM))
	waitDraining(t, replicas[1])
	for _, r := range replicas[1:] {
		require.NoError(t, os.WriteFile(filepath.Join(r.workdir, "go.txt"), []byte("go"), 0o644))
	}
	wg.Wait()
	for _, s := range sessions {
		require.Equal(t, 21, s.count, "no call was lost to the drain")
	}
	for _, s := range sessions {
		require.Len(t, s.errors, func() (n int) {
			for _, e := range s.errors {
				if strings.HasPrefix(e, "r0: ") {
					n++
				}
			}
			return n
		}(), "the drain cut no running call (no error but r0's): %q", s.errors)
	}
	<-replicas[1].exited
	require.Equal(t, 0, replicas[1].cmd.ProcessState.ExitCode(), replicas[1].stderr.String())

	phase(plain, 21, 30)
	for _, s := range sessions {
		require.Equal(t, 30, s.count)
		require.Equal(t, "r2", s.replica)
	}
	total := 0
	for _, s := range sessions {
		total += len(s.errors)
	}
	require.Equal(t, killed+drained, total, "one clean error per session whose replica went away")
	for i, s := range sessions {
		t.Logf("session %d: errors %q", i, s.errors)
	}
}

// TestMCPHTTPReplicasDurable: TestMCPHTTPReplicas's proxy with a session
// store the replicas share, an S3 bucket (a SeaweedFS server;
// session_checkpoint: every_call), and one working dir: a replica killed
// mid-run, then one drained, cost no session anything. Their sessions'
// next calls land on another replica, which takes them over and resumes
// their kernels; no call fails, no count is lost.
func TestMCPHTTPReplicasDurable(t *testing.T) {
	haproxy := backendtest.Program(t, "haproxy", "/usr/sbin/haproxy", "haproxy")
	endpoint, bucket := s3test.Start(t)
	s3test.Env(t, endpoint) // the replicas inherit it
	workdir := t.TempDir()
	setup := httpSetup{config: "  mode: strict\n  session_store: s3://" + bucket + "/replicas\n  session_checkpoint: every_call\n", workdir: workdir}
	replicas := make([]*httpMCP, 3)
	for i := range replicas {
		replicas[i] = startHTTPMCPIn(t, setup, nil, "--drain-timeout", "2m")
	}
	for _, r := range replicas {
		r.waitReady(t)
	}
	proxy := startProxy(t, haproxy, replicas)

	sessions := make([]*mcp.ClientSession, 8)
	counts := make([]int, len(sessions))
	for i := range sessions {
		client := mcp.NewClient(&mcp.Implementation{Name: "hermes-test", Version: "v0.0.1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: proxy.base + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{testHTTPToken, nil}}}, nil)
		require.NoError(t, err)
		sessions[i] = cs
		t.Cleanup(func() { cs.Close() })
		text, _, isErr := callCode(t, cs, map[string]any{"code": "count = 0\nprint('ok')"})
		require.False(t, isErr, text)
	}
	phase := func(n int) {
		var wg sync.WaitGroup
		for i, cs := range sessions {
			wg.Go(func() {
				for range n {
					text, _, isErr := callCode(t, cs, map[string]any{"code": "count += 1\nprint(count)"})
					if isErr || text != fmt.Sprintf("%d\n", counts[i]+1) {
						t.Errorf("session %d, call %d: %q (error %v)", i, counts[i]+1, text, isErr)
						return
					}
					counts[i]++
				}
			})
		}
		wg.Wait()
		require.False(t, t.Failed())
	}
	phase(5)
	require.NoError(t, replicas[0].cmd.Process.Kill())
	<-replicas[0].exited
	phase(5)
	require.NoError(t, replicas[1].cmd.Process.Signal(syscall.SIGTERM))
	<-replicas[1].exited
	require.Equal(t, 0, replicas[1].cmd.ProcessState.ExitCode(), replicas[1].stderr.String())
	phase(5)
	for i := range sessions {
		require.Equal(t, 15, counts[i])
	}
}
