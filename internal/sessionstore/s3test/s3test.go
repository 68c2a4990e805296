// Package s3test starts a real S3-compatible server for tests: SeaweedFS
// (Apache-2.0), its weed binary built from the Go module
// github.com/seaweedfs/seaweedfs at [Version] and run as `weed mini`, on
// the loopback, with its data in a temp dir of its own.
//
// The binary is built once per machine (about as long as a large Go
// program takes to build from an empty build cache: minutes) into the
// repository's .cache/seaweedfs/VERSION/ and reused: the module's source
// is fetched with `go mod download` (from the Go module proxy, so the
// tests need Go and network access to the proxy, nothing to apt-install),
// then `go build` runs in it as the main module (go install pkg@version
// refuses a module with replace directives, which SeaweedFS has). Each
// command is printed to stderr ("+ go ...") before it runs; processes
// building it at once take turns on a file lock, and the binary is
// written under a temporary name, then renamed, so a half-written one
// never exists.
//
// Callers gate their tests with internal/testenv.RealEngines; in the full
// tier a missing go command or a failed build fails the test saying what
// to do.
package s3test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/gofrs/flock"

	"github.com/hermes-agent/hermes-wasm-exec/internal/proctree"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// Module and Version are the SeaweedFS module the weed binary is built
// from.
const (
	Module  = "github.com/seaweedfs/seaweedfs"
	Version = "v0.0.0-20261109003541-7506e5f91cd6"
)

// AccessKey and SecretKey are the static credentials every server
// started here accepts (an identity with every right): set them as
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. Region is the one to sign
// with.
const (
	AccessKey = "hermes-test-access"
	SecretKey = "hermes-test-secret-0123456789"
	Region    = "us-east-1"
)

// Bucket is the bucket Start creates.
const Bucket = "hermes-test"

// readyTimeout bounds how long a started server has to create the bucket.
const readyTimeout = 2 * time.Minute

// Start starts a SeaweedFS server with an S3 endpoint on 127.0.0.1 at a
// free port and an empty bucket, and returns the endpoint
// ("http://127.0.0.1:PORT") and the bucket. It sets nothing in this
// process's environment. The server is stopped and its dir removed when
// tb ends. It fails tb when the binary cannot be built or the server does
// not start, with the end of its log.
func Start(tb testing.TB) (endpoint, bucket string) {
	tb.Helper()
	testenv.SkipUnderWine(tb, "wine has no go command to build SeaweedFS with; the S3 store is tested against it on Linux")
	weed := Binary(tb)

	// A short dir name: the filer and the S3 gateway put Unix sockets in
	// it, whose paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "hsw-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	data := filepath.Join(dir, "data")
	for _, d := range []string{tmp, data} {
		if err := os.Mkdir(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(conf, s3Config(), 0o600); err != nil {
		tb.Fatal(err)
	}
	ports, err := freePorts(10)
	if err != nil {
		tb.Fatal(err)
	}
	args := []string{
		"mini",
		"-dir=" + data,
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + ports[0], "-master.port.grpc=" + ports[1],
		"-volume.port=" + ports[2], "-volume.port.grpc=" + ports[3],
		"-filer.port=" + ports[4], "-filer.port.grpc=" + ports[5],
		"-s3.port=" + ports[6], "-s3.port.grpc=" + ports[7],
		"-admin.port=" + ports[8], "-admin.port.grpc=" + ports[9], "-admin.port.legacy=0",
		"-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-master.telemetry=false",
		"-s3.config=" + conf,
		"-filer.localSocket=" + filepath.Join(dir, "f.sock"),
		"-s3.localSocket=" + filepath.Join(dir, "s.sock"),
	}
	logPath := filepath.Join(dir, "weed.log")
	logf, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(weed, args...)
	cmd.Dir = dir
	// weed writes its glog files and other scratch to the temp dir.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.WaitDelay = 5 * time.Second
	fmt.Fprintf(os.Stderr, "+ %s\n", testenv.CommandLine(weed, args))
	started := time.Now()
	tree, err := proctree.Start(cmd)
	if err != nil {
		logf.Close()
		tb.Fatalf("s3test: starting %s: %v", weed, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = tree.Wait()
		logf.Close()
		close(exited)
	}()
	tb.Cleanup(func() {
		tree.Stop(10 * time.Second)
		<-exited
		tree.Release()
	})

	endpoint = "http://127.0.0.1:" + ports[6]
	client := s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		Retryer:      aws.NopRetryer{},
	})
	// Ready once the gateway creates the bucket: until then it refuses
	// connections or answers 503 while the filer and the volume server
	// come up.
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	var last error
	for {
		_, last = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(Bucket)})
		var ae smithy.APIError
		if last == nil || errors.As(last, &ae) && (ae.ErrorCode() == "BucketAlreadyOwnedByYou" || ae.ErrorCode() == "BucketAlreadyExists") {
			tb.Logf("s3test: SeaweedFS served %s after %v", endpoint, time.Since(started).Round(time.Millisecond))
			return endpoint, Bucket
		}
		select {
		case <-poll.C:
			continue
		case <-exited:
			tb.Fatalf("s3test: weed exited (%v) before it served S3; the end of its log (%s):\n%s", waitErr, logPath, tail(logPath, 40))
		case <-ctx.Done():
			tb.Fatalf("s3test: weed's S3 endpoint %s did not create a bucket within %v (last: %v); the end of its log (%s):\n%s", endpoint, readyTimeout, last, logPath, tail(logPath, 40))
		}
	}
}

// s3Config is weed's -s3.config: one identity with every right, whose
// keys are AccessKey and SecretKey.
func s3Config() []byte {
	b, _ := json.Marshal(map[string]any{
		"identities": []any{map[string]any{
			"name":        "hermes-test",
			"credentials": []any{map[string]string{"accessKey": AccessKey, "secretKey": SecretKey}},
			"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
		}},
	})
	return b
}

// freePorts returns n distinct ports free on 127.0.0.1 now: all are held
// at once while they are picked, so none repeats.
func freePorts(n int) ([]string, error) {
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("s3test: no free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return ports, nil
}

var (
	buildMu  sync.Mutex
	built    string
	buildErr error
)

// Binary returns the path of the weed binary, building it first when the
// cache has none (see the package doc); it fails tb when that fails. A
// failed build is not tried again in the same process.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if built == "" && buildErr == nil {
		built, buildErr = build(tb)
	}
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return built
}

func build(tb testing.TB) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "seaweedfs", Version)
	exe := "weed"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	path := filepath.Join(dir, exe)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return path, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("s3test: the SeaweedFS tests build weed from its Go module, and there is no go command on PATH: install Go (see go.mod for the version) and put it on PATH, or put a weed binary of %s@%s at %s", Module, Version, path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("s3test: %w", err)
	}
	lock := flock.New(filepath.Join(dir, ".lock"))
	if err := lock.Lock(); err != nil {
		return "", fmt.Errorf("s3test: locking %s: %w", dir, err)
	}
	defer lock.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path, nil // built by another process while this one waited
	}
	start := time.Now()
	ctx := context.Background()
	out, err := run(ctx, "", goCmd, "mod", "download", "-json", Module+"@"+Version)
	if err != nil {
		return "", fmt.Errorf("s3test: fetching SeaweedFS's source (it needs network access to the Go module proxy, GOPROXY): %w", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("s3test: go mod download %s@%s named no source dir (%v %s): %s", Module, Version, err, mod.Error, out)
	}
	tmp := filepath.Join(dir, ".weed-"+strconv.Itoa(os.Getpid())+"-"+exe)
	defer os.Remove(tmp)
	if _, err := run(ctx, mod.Dir, goCmd, "build", "-o", tmp, "./weed"); err != nil {
		return "", fmt.Errorf("s3test: building SeaweedFS's weed (%s@%s needs the Go its go.mod names; with an older go, set GOTOOLCHAIN to a newer one, e.g. GOTOOLCHAIN=go1.27.3, for this build): %w", Module, Version, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("s3test: %w", err)
	}
	tb.Logf("s3test: built %s in %v", path, time.Since(start).Round(time.Second))
	return path, nil
}

// run runs name with args in dir (the current dir when ""), printing the
// command to stderr first, and returns its stdout; its error holds the
// command line and the end of its output. The module is built on its
// own: no workspace, no vendoring, go.mod left as it is.
func run(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	line := testenv.CommandLine(name, args)
	if dir != "" {
		line = "(cd " + dir + " && " + line + ")"
	}
	fmt.Fprintf(os.Stderr, "+ %s\n", line)
	if err := proctree.Run(ctx, cmd); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\n%s", line, err, testenv.LastLines(stderr.String()+stdout.String(), 30))
	}
	return stdout.String(), nil
}

// repoRoot is the dir of this repository's go.mod, found from the
// current dir up (a test's current dir is its package's).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/hermes-agent/hermes-wasm-exec\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("s3test: not run inside the hermes-wasm-exec repository (no go.mod of it above the current dir)")
		}
		dir = parent
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return testenv.LastLines(string(b), n)
}

// Env points the AWS SDK of this process at endpoint with this package's
// credentials, and at nothing of this machine's own AWS setup: no config
// or credentials file, no profile, no region (OpenS3 defaults it for a
// custom endpoint), no instance metadata, no CA bundle. The variables are restored when
// tb ends (tb.Setenv; not for parallel tests).
func Env(tb testing.TB, endpoint string) {
	dir := tb.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":            endpoint,
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_ACCESS_KEY_ID":           AccessKey,
		"AWS_SECRET_ACCESS_KEY":       SecretKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "",
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		// A CA bundle of this machine's (a Linux path: under wine, a
		// Windows test binary could not open it).
		"AWS_CA_BUNDLE": "",
	} {
		tb.Setenv(k, v)
	}
}
