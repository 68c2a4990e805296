//go:build unix

package main

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// toReplica sends every request to the replica target holds: a proxy
// whose replica went away, reduced to its redispatch.
type toReplica struct {
	target atomic.Pointer[httpMCP]
	token  string
}

func (tr *toReplica) RoundTrip(r *http.Request) (*http.Response, error) {
	s := tr.target.Load()
	u, err := url.Parse(s.base)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	r.Header.Set("Authorization", "Bearer "+tr.token)
	return http.DefaultTransport.RoundTrip(r)
}

// An MCP session whose replica dies goes on on another replica sharing
// the session store: the other takes the session id over and resumes its
// kernel (session_checkpoint: every_call keeps what the killed replica's
// calls finished); after a drain (SIGTERM) without checkpoints, the same,
// from the kernels the drain suspended.
func TestMCPHTTPTakeover(t *testing.T) {
	t.Parallel()
	store, workdir := t.TempDir(), t.TempDir()
	setup := httpSetup{config: "  mode: strict\n  session_store: " + store + "\n  session_checkpoint: every_call\n", workdir: workdir}
	r0 := startHTTPMCPIn(t, setup, nil)
	r1 := startHTTPMCPIn(t, setup, nil)
	r0.waitReady(t)
	r1.waitReady(t)

	tr := &toReplica{token: testHTTPToken}
	tr.target.Store(r0)
	client := mcp.NewClient(&mcp.Implementation{Name: "hermes-test", Version: "v0.0.1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r0.base + "/mcp",
		HTTPClient: &http.Client{Transport: tr}, MaxRetries: 5}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	text, _, isErr := callCode(t, cs, map[string]any{"code": "x = 41\nprint('set')"})
	require.False(t, isErr, text)

	require.NoError(t, r0.cmd.Process.Kill())
	<-r0.exited
	tr.target.Store(r1)
	text, res, isErr := callCode(t, cs, map[string]any{"code": "x += 1\nprint(x)"})
	require.False(t, isErr, "%s\nr1: %s", text, r1.stderr.String())
	require.Equal(t, "42\n", text)
	require.NotNil(t, res.Kernel)
	require.True(t, res.Kernel.Resumed, "%+v", res.Kernel)

	// r1 drains; a new replica picks the session up.
	r2 := startHTTPMCPIn(t, httpSetup{config: "  mode: strict\n  session_store: " + store + "\n", workdir: workdir}, nil)
	r2.waitReady(t)
	require.NoError(t, r1.cmd.Process.Signal(syscall.SIGTERM))
	<-r1.exited
	tr.target.Store(r2)
	text, res, isErr = callCode(t, cs, map[string]any{"code": "print(x)"})
	require.False(t, isErr, "%s\nr2: %s", text, r2.stderr.String())
	require.Equal(t, "42\n", text)
	require.True(t, res.Kernel.Resumed, "%+v", res.Kernel)
}
