package executor

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/cpustat"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore/s3test"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// s3Store starts a SeaweedFS S3 server, points this process's AWS SDK at
// it, and returns a session_store URL in its bucket.
func s3Store(tb testing.TB) string {
	tb.Helper()
	testenv.RealEngines(tb, "a SeaweedFS S3 server")
	endpoint, bucket := s3test.Start(tb)
	s3test.Env(tb, endpoint)
	return "s3://" + bucket + "/kernels"
}

// Durable kernels in an S3-compatible store: suspended and resumed across
// executors (a restart), and handed over between two that share it.
func TestDurableS3(t *testing.T) {
	store, wd := s3Store(t), t.TempDir()
	e1 := durableExecutor(t, store, 4)
	e2 := durableExecutor(t, store, 4)
	require.Nil(t, e1.storeErr)
	okCall(t, e1, Request{Session: "s", Workdir: wd, Code: "import sqlite3\nx = 'in s3'"})
	res := okCall(t, e2, Request{Session: "s", Workdir: wd, Code: "x += ', handed over'\nprint(x)"})
	require.Equal(t, "in s3, handed over\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	require.NoError(t, e2.Close(context.Background()))
	require.True(t, e1.Suspended("s"))

	e3 := durableExecutor(t, store, 4)
	res = okCall(t, e3, Request{Session: "s", Workdir: wd, Code: "print(x)"})
	require.Equal(t, "in s3, handed over\n", res.Output)
	require.True(t, res.Kernel.Resumed)
	e3.CloseSession(context.Background(), "s")
	require.False(t, e3.Suspended("s"), "close_session deletes the image")
}

// BenchmarkResumeFromStore: a session's call whose kernel (the issue's:
// `import json, re, sqlite3` and 1 MB of data) was suspended, from a
// local dir and from an S3 server on loopback. ns/op is the whole call;
// resume-ms the resume within it (kernel.resume_seconds), suspend-ms the
// suspension before it (outside the clock), image-MiB the image.
//
//	go test -run X -bench ResumeFromStore -benchtime 20x ./runtime/executor/
func BenchmarkResumeFromStore(b *testing.B) {
	for _, where := range []string{"dir", "s3"} {
		b.Run(where, func(b *testing.B) {
			store := b.TempDir()
			if where == "s3" {
				store = s3Store(b)
			}
			e := durableExecutor(b, store, 4)
			wd := b.TempDir()
			res, err := e.Execute(context.Background(), Request{Session: "s", Workdir: wd,
				Code: "import json, re, sqlite3\nimport random\ndata = [random.random() for _ in range(40000)]\nblob = json.dumps(data)[:1 << 20]"})
			require.NoError(b, err)
			require.Equal(b, config.StatusSuccess, res.Status, res.Output)
			var resume, suspend time.Duration
			var bytes uint64
			for b.Loop() {
				b.StopTimer()
				before := e.Stats().StoredBytes
				start := time.Now()
				e.reapIdle(time.Now().Add(time.Hour), time.Second)
				suspend += time.Since(start)
				bytes = e.Stats().StoredBytes - before
				b.StartTimer()
				res, err := e.Execute(context.Background(), Request{Session: "s", Workdir: wd, Code: "n = len(blob)"})
				if err != nil || res.Status != config.StatusSuccess || !res.Kernel.Resumed {
					b.Fatalf("not resumed: %v %+v", err, res)
				}
				resume += time.Duration(res.Kernel.ResumeSeconds * float64(time.Second))
			}
			b.ReportMetric(float64(resume.Milliseconds())/float64(b.N), "resume-ms")
			b.ReportMetric(float64(suspend.Milliseconds())/float64(b.N), "suspend-ms")
			b.ReportMetric(float64(bytes)/(1<<20), "image-MiB")
		})
	}
}

// BenchmarkThousandSuspended: 1,000 sessions, each with the idle
// kernel, suspended into a local dir (one op is all of them: run it with
// -benchtime 1x). store-MiB is the store's size; rss-MiB the process's
// resident memory after all are suspended, less before the first
// (the goal: none held for a suspended session). HERMES_BENCH_SESSIONS
// sets how many; HERMES_BENCH_COMPRESSION=small measures zstd images.
//
//	go test -run X -bench ThousandSuspended -benchtime 1x -timeout 1h ./runtime/executor/
func BenchmarkThousandSuspended(b *testing.B) {
	if goruntime.GOOS != "linux" {
		b.Skip("reads the resident memory from /proc/self/status")
	}
	sessions := 1000
	if n, err := strconv.Atoi(os.Getenv("HERMES_BENCH_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	store := b.TempDir()
	var opts []func(*config.Config, *Options)
	if c := os.Getenv("HERMES_BENCH_COMPRESSION"); c != "" { // fast (the default) or small
		opts = append(opts, func(cfg *config.Config, _ *Options) { cfg.CodeExecution.SessionStoreCompression = c })
	}
	e := durableExecutor(b, store, 4, opts...)
	wd := b.TempDir()
	code := "import json, re, sqlite3\nimport random\ndata = [random.random() for _ in range(40000)]\nblob = json.dumps(data)[:1 << 20]"
	okCall(b, e, Request{Session: "warm", Workdir: wd, Code: code})
	e.reapIdle(time.Now().Add(time.Hour), time.Second)
	settle := func() int64 {
		goruntime.GC()
		debug.FreeOSMemory()
		rss, _ := cpustat.RSS()
		return rss
	}
	before := settle()
	for b.Loop() {
		for i := range sessions {
			okCall(b, e, Request{Session: fmt.Sprint("s", i), Workdir: wd, Code: code})
			// The kernel limit (4) suspends the least recently used; the
			// rest at the end.
		}
		e.reapIdle(time.Now().Add(time.Hour), time.Second)
	}
	after := settle()
	images, bytes, err := e.images.Usage()
	require.NoError(b, err)
	require.Equal(b, sessions+1, images)
	b.ReportMetric(float64(bytes)/(1<<20), "store-MiB")
	b.ReportMetric(float64(after-before)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(bytes)/float64(images)/(1<<20), "image-MiB")
}
