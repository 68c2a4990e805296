package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/cli"
	"github.com/hermes-agent/hermes-wasm-exec/cmd/hermes-wasm-exec/internal/listen"
	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/wire"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// `mcp --http ADDR` serves the same execute_code tool over MCP's Streamable
// HTTP transport (the official SDK's handler), for agents that reach the
// executor over a network and for running it as a service: behind a
// proxy that keeps each Mcp-Session-Id on the replica that issued it, on
// Kubernetes (deploy/, docs/service.md). One listener serves:
//
//	/mcp      the MCP endpoint: each MCP session has its session kernel
//	/healthz  200 while the process runs
//	/readyz   200 once the interpreter is loaded and the warm pool has
//	          filled once, 503 before and while draining
//	/metrics  Prometheus text format
//
// A TCP listener always has a token (HERMES_SERVE_TOKEN, --token-file, or
// one generated into a private file: listen.ResolveToken): /mcp and
// /metrics need "Authorization: Bearer <token>"; the probes do not. A
// Unix socket (--http unix:PATH) is owner-only (0600) and needs none.
//
// Connections that have not sent an authenticated request yet are capped
// (--max-unauthenticated), must send a request's headers within
// --auth-timeout (ReadHeaderTimeout), and are closed after each response;
// an authenticated keep-alive connection waits at most --idle-timeout for
// its next request (IdleTimeout). Neither cuts a request in progress: a
// call that runs for code_execution.timeout, or the GET stream of a
// session's server-to-client messages (there is no ReadTimeout nor
// WriteTimeout).

// maxHTTPBody bounds a request body, read or not, authenticated or not: a
// script is at most cli.MaxScript, and JSON escaping can double it.
const maxHTTPBody = 2*cli.MaxScript + 1<<20

// drainReason is the interrupt reason of the calls a drain cuts short.
const drainReason = "the server is shutting down (drained: --drain-timeout passed)"

// httpLimits are the listener's limits on connections.
type httpLimits struct {
	auth      time.Duration // --auth-timeout: a request's headers must arrive within it
	idle      time.Duration // --idle-timeout: an authenticated keep-alive connection's wait for its next request
	maxUnauth int           // --max-unauthenticated
}

// httpListener is what --http asks for.
type httpListener struct {
	network, address string
	token            *listen.Token // nil on a Unix socket
	limits           httpLimits
}

// parseHTTPAddr validates --http (HOST:PORT, or unix:PATH) and the limits,
// and resolves the token of a TCP listener (listen.ResolveToken: given,
// read, or generated; the caller closes it).
func parseHTTPAddr(addr, tokenFile string, lim httpLimits) (*httpListener, error) {
	switch {
	case lim.auth < 0:
		return nil, errors.New("--auth-timeout must not be negative (0: no limit)")
	case lim.idle < 0:
		return nil, errors.New("--idle-timeout must not be negative (0: no limit)")
	case lim.maxUnauth < 0:
		return nil, errors.New("--max-unauthenticated must not be negative (0: no cap)")
	}
	hl := &httpListener{network: "tcp", address: addr, limits: lim}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, fmt.Errorf("--http %q: give the socket's path, e.g. unix:/run/user/1000/hermes.sock", addr)
		}
		if tokenFile != "" {
			return nil, errors.New("--token-file goes with --http HOST:PORT (a Unix socket is owner-only, 0600: that is its authentication)")
		}
		hl.network, hl.address = "unix", path
		return hl, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("--http %q: %v (give HOST:PORT, e.g. 127.0.0.1:8080 or :8080, or unix:PATH)", addr, err)
	}
	var err error
	if hl.token, err = listen.ResolveToken(tokenFile); err != nil {
		return nil, err
	}
	return hl, nil
}

// listen opens the listener: a TCP one caps its unauthenticated
// connections (logf says when it refuses one).
func (hl *httpListener) listen(logf func(string, ...any)) (net.Listener, error) {
	ln, err := listen.Listen(hl.network, hl.address)
	if err != nil {
		return nil, err
	}
	if hl.network == "tcp" {
		ln = listen.Gated(ln, hl.limits.maxUnauth, logf)
	}
	return ln, nil
}

// metrics are the service's Prometheus metrics, in their own registry.
type metrics struct {
	reg        *prometheus.Registry
	executions *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	toolCalls  *prometheus.CounterVec
	approvals  *prometheus.CounterVec
	sessions   prometheus.Gauge
	resume     prometheus.Histogram
}

func newMetrics(ex *executor.Executor) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hermes_executions_total", Help: "execute_code calls, by mode and result status.",
		}, []string{"mode", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hermes_execution_duration_seconds", Help: "Wall time of execute_code calls, by mode.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"mode"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hermes_tool_calls_total", Help: "Tool calls made by scripts, by tool and outcome (ok or error).",
		}, []string{"tool", "outcome"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hermes_approvals_total", Help: "Approval questions for dangerous commands, by outcome (approved, denied, unavailable, error).",
		}, []string{"outcome"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hermes_mcp_sessions", Help: "Open MCP sessions.",
		}),
		resume: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hermes_kernel_resume_seconds", Help: "Time to resume a suspended session kernel from the session store (a call's extra latency).",
			Buckets: []float64{.005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	stat := func(f func(executor.Stats) float64) func() float64 {
		return func() float64 { return f(ex.Stats()) }
	}
	counter := func(name, help string, f func(executor.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			stat(func(s executor.Stats) float64 { return float64(f(s)) }))
	}
	m.reg.MustRegister(m.executions, m.duration, m.toolCalls, m.approvals, m.sessions, m.resume,
		counter("hermes_kernels_suspended_total", "Session kernels suspended into the session store (evicted, idle, shutdown).",
			func(s executor.Stats) uint64 { return s.Suspended }),
		counter("hermes_kernels_resumed_total", "Session kernels resumed from the session store.",
			func(s executor.Stats) uint64 { return s.Resumed }),
		counter("hermes_kernel_resume_failures_total", "Suspended kernels that could not resume (damaged, another build, another key): their sessions started afresh.",
			func(s executor.Stats) uint64 { return s.ResumeFailures }),
		counter("hermes_kernel_checkpoints_total", "Kernel images written after a call (session_checkpoint: every_call).",
			func(s executor.Stats) uint64 { return s.Checkpoints }),
		counter("hermes_session_store_failures_total", "Session store failures that calls went on without (a lease, a checkpoint or a suspension not written).",
			func(s executor.Stats) uint64 { return s.StoreFailures }),
		counter("hermes_session_store_written_bytes_total", "Bytes of kernel images written to the session store.",
			func(s executor.Stats) uint64 { return s.StoredBytes }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hermes_kernels", Help: "Live session kernels."},
			stat(func(s executor.Stats) float64 { return float64(s.Kernels) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hermes_kernels_running", Help: "Session kernels running a call."},
			stat(func(s executor.Stats) float64 { return float64(s.Running) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hermes_warm_pool_kernels", Help: "Ready kernels in the warm pools."},
			stat(func(s executor.Stats) float64 { return float64(s.PoolIdle) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hermes_kernel_evictions_total", Help: "Kernels closed to make room (max_session_kernels) or for being idle (kernel_idle_timeout)."},
			stat(func(s executor.Stats) float64 { return float64(s.Evictions) })),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observe counts one finished execution.
func (m *metrics) observe(res executor.Result, took time.Duration) {
	if m == nil {
		return
	}
	mode := res.Mode
	if mode == "" {
		mode = "unknown"
	}
	m.executions.WithLabelValues(mode, res.Status).Inc()
	if res.Kernel != nil && res.Kernel.Resumed {
		m.resume.Observe(res.Kernel.ResumeSeconds)
	}
	m.duration.WithLabelValues(mode).Observe(took.Seconds())
	for _, tc := range res.ToolCalls {
		outcome := "ok"
		if !tc.OK {
			outcome = "error"
		}
		m.toolCalls.WithLabelValues(tc.Tool, outcome).Inc()
	}
}

func (m *metrics) approval(outcome string) {
	if m != nil {
		m.approvals.WithLabelValues(outcome).Inc()
	}
}

// httpService is the listener's handler and its state.
type httpService struct {
	m     *Server
	ex    *executor.Executor
	token []byte // nil: an owner-only Unix socket, no token
	mcp   *mcp.StreamableHTTPHandler

	ready    atomic.Bool // the interpreter is loaded and the pool filled once
	draining atomic.Bool
	// posts counts the /mcp POSTs being answered: a drain waits for them,
	// so that a call that has ended has also been answered.
	posts inflight
	// takeoverMu: one session taken over at a time (takeOver), and no new
	// session started meanwhile (it could get the id being taken over).
	takeoverMu sync.RWMutex
}

// inflight counts requests in progress; wait's channel closes when none
// is.
type inflight struct {
	mu   sync.Mutex
	n    int
	zero []chan struct{}
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 {
		for _, ch := range f.zero {
			close(ch)
		}
		f.zero = nil
	}
}

func (f *inflight) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	if f.n == 0 {
		close(ch)
	} else {
		f.zero = append(f.zero, ch)
	}
	return ch
}

func newHTTPService(m *Server, ex *executor.Executor, token *listen.Token, cfg config.Config, logger *slog.Logger) *httpService {
	h := &httpService{m: m, ex: ex}
	if token != nil {
		h.token = []byte(token.Value)
	}
	idle := time.Duration(cfg.CodeExecution.KernelIdleTimeout) * time.Second
	if idle <= 0 {
		idle = 30 * time.Minute
	}
	h.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.server }, &mcp.StreamableHTTPOptions{
		Logger: logger,
		// A session nobody has used for as long as its kernel would be
		// kept idle ends, and its kernel with it.
		SessionTimeout: idle,
	})
	return h
}

// ServeHTTP routes the listener's requests; every body is bounded first,
// before anything (authentication included) could read it.
func (h *httpService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxHTTPBody)
	if listen.Unauthenticated(connOf(r)) {
		// Until it has sent the token, a connection gets one answer (a
		// probe's, a 401) and is closed: it is not kept alive to take a
		// place under --max-unauthenticated. authorized lifts this.
		w.Header().Set("Connection", "close")
	}
	switch r.URL.Path {
	case "/healthz":
		writeText(w, http.StatusOK, "ok\n")
	case "/readyz":
		switch {
		case h.draining.Load():
			writeText(w, http.StatusServiceUnavailable, "draining\n")
		case !h.ready.Load():
			writeText(w, http.StatusServiceUnavailable, "starting: loading the interpreter and filling the warm pool\n")
		default:
			writeText(w, http.StatusOK, "ready\n")
		}
	case "/metrics":
		if h.authorized(w, r) {
			promhttp.HandlerFor(h.m.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		}
	case "/mcp":
		if !h.authorized(w, r) {
			return
		}
		if h.draining.Load() && r.Header.Get("Mcp-Session-Id") == "" {
			// A new session: this replica is going away.
			w.Header().Set("Retry-After", "1")
			writeText(w, http.StatusServiceUnavailable, "this server is draining (shutting down): it takes no new MCP sessions; connect again (a proxy sends you to another replica)\n")
			return
		}
		if r.Method == http.MethodPost {
			h.posts.add()
			defer h.posts.done()
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" && !h.draining.Load() {
			h.takeOver(r, id)
		} else if id == "" && r.Method == http.MethodPost {
			// A new session gets its id under the lock a takeover holds
			// while it gives its session the id it takes over (sessionID).
			h.takeoverMu.RLock()
			defer h.takeoverMu.RUnlock()
		}
		h.mcp.ServeHTTP(w, r)
	default:
		writeText(w, http.StatusNotFound, "not found: the MCP endpoint is /mcp (also /healthz, /readyz, /metrics)\n")
	}
}

// authorized checks the bearer token (constant time: wire.TokenEqual) and
// answers 401 when it is missing or wrong. Every request is checked,
// whatever its connection sent before (a proxy carries many clients'
// requests on one connection); a connection that has sent the token once
// no longer counts as unauthenticated.
func (h *httpService) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.token == nil {
		return true // an owner-only Unix socket
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && wire.TokenEqual(strings.TrimSpace(got), h.token) {
		if c := connOf(r); listen.Unauthenticated(c) {
			listen.Authenticated(c)
			w.Header().Del("Connection")
		}
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="hermes-wasm-exec"`)
	writeText(w, http.StatusUnauthorized, "unauthorized: send Authorization: Bearer <token> (the server's $"+listen.TokenEnv+", its --token-file, or the file it generated the token into: the path is on its stderr)\n")
	return false
}

// connKey is the request context's key of its connection.
type connKey struct{}

// connOf is the connection r arrived on (nil when unknown).
func connOf(r *http.Request) net.Conn {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	return c
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text)
}

// becomeReady loads the interpreter and waits for the warm pool to fill
// once (or to fail: then the service is ready without it, and says why),
// then marks the service ready.
func (h *httpService) becomeReady(ctx context.Context, pool bool, warnf func(string, ...any)) {
	if err := h.ex.Warm(ctx); err != nil && ctx.Err() == nil {
		warnf("loading the strict interpreter: %v (strict runs will fail)", err)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(2 * time.Minute)
	for pool {
		if st := h.ex.Stats(); st.PoolTarget > 0 && st.PoolIdle >= st.PoolTarget {
			break
		}
		if time.Now().After(deadline) {
			warnf("the warm pool did not fill in 2 minutes; ready without it")
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	h.ready.Store(true)
}

// runHTTP serves the listener until a signal (or ctx) ends it: the first
// SIGTERM or interrupt drains (readyz 503, no new sessions, running calls
// finish within drain, then are interrupted), a second one ends at once.
// It returns the exit code.
func runHTTP(ctx context.Context, ln net.Listener, h *httpService, lim httpLimits, drain time.Duration, sigs <-chan os.Signal, stderr io.Writer, pool bool) int {
	infof := func(format string, a ...any) { fmt.Fprintf(stderr, "hermes-wasm-exec mcp: "+format+"\n", a...) }
	srv := &http.Server{
		Handler: h,
		// A request's headers (which carry the token) come within
		// --auth-timeout; an idle keep-alive connection waits
		// --idle-timeout for the next request (0: no limit; with no
		// ReadTimeout either, net/http then sets none). No ReadTimeout
		// nor WriteTimeout: they would cut a long call, or a session's
		// GET stream.
		ReadHeaderTimeout: lim.auth,
		IdleTimeout:       lim.idle,
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	readyCtx, stopReady := context.WithCancel(ctx)
	defer stopReady()
	go h.becomeReady(readyCtx, pool, func(f string, a ...any) { infof("warning: "+f, a...) })

	select {
	case err := <-served:
		infof("%v", err)
		return cli.ExitFailed
	case <-ctx.Done():
	case sig := <-sigs:
		infof("%v: draining (readyz 503, no new sessions; running calls get %v to finish; send it again to stop at once)", sig, drain)
	}
	h.draining.Store(true)
	idle := make(chan struct{})
	go func() {
		// The calls end, then their answers go out.
		h.m.runs.Wait()
		<-h.posts.wait()
		close(idle)
	}()
	timer := time.NewTimer(drain)
	defer timer.Stop()
	code := cli.ExitOK
	select {
	case <-idle:
		infof("no calls running: stopping")
	case <-timer.C:
		infof("drain timeout (%v): interrupting the calls still running", drain)
		h.m.cancel(&executor.InterruptError{Reason: drainReason})
	case sig := <-sigs:
		infof("%v again: stopping at once", sig)
		h.m.cancel(&executor.InterruptError{Reason: "the server is shutting down"})
		code = cli.ExitFailed
	}
	// The calls have ended or been interrupted: their results go out
	// before the connections close.
	h.m.Stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close() // SSE streams that stay open
	}
	return code
}

// takeOver opens here the MCP session id that this replica does not know
// but whose kernel the session store holds (its replica died or drained,
// and the proxy sent its requests here): a session with that id is
// initialized as its client did, without the client's capabilities (so
// no approval questions by elicitation: approvals.mode's answer for a
// client that cannot be asked applies), and the request then goes to it;
// its first call resumes the kernel (the lease, lease.go, keeps two
// replicas off one session). A session the store does not hold gets the
// SDK's "session not found", as before.
func (h *httpService) takeOver(r *http.Request, id string) {
	if h.m.knows(id) || !h.ex.Suspended(mcpSessionName(id)) {
		return
	}
	h.takeoverMu.Lock()
	defer h.takeoverMu.Unlock()
	if h.m.knows(id) {
		return // taken over by a request that came at the same time
	}
	version := cmp.Or(r.Header.Get("Mcp-Protocol-Version"), "2025-06-18")
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "hermes-takeover", "method": "initialize",
		"params": map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "hermes-wasm-exec takeover", "version": "1"}}})
	send := func(body []byte, withID bool) (*httptest.ResponseRecorder, error) {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, r.URL.String(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if withID {
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		rec := httptest.NewRecorder()
		h.mcp.ServeHTTP(rec, req)
		return rec, nil
	}
	h.m.nextID.Store(id)
	rec, err := send(init, false)
	h.m.nextID.Store("")
	if err == nil && (rec.Code != http.StatusOK || rec.Header().Get("Mcp-Session-Id") != id) {
		err = fmt.Errorf("initialize answered %d: %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	if err == nil {
		rec, err = send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), true)
		if err == nil && rec.Code/100 != 2 {
			err = fmt.Errorf("notifications/initialized answered %d: %s", rec.Code, strings.TrimSpace(rec.Body.String()))
		}
	}
	if err != nil {
		h.m.opts.Logf("mcp: taking over session %s: %v", mcpSessionName(id), err)
		return
	}
	h.m.opts.Logf("mcp: session %s taken over from the session store", mcpSessionName(id))
}

// absPath is p made absolute, for messages.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
