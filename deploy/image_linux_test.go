package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/backend/backendtest"
)

// TestMain stops the test Docker engine after the tests.
func TestMain(m *testing.M) { os.Exit(backendtest.Main(m)) }

// TestImage builds deploy/Dockerfile's two targets as .ci/image does (a
// static binary in the context) with the test Docker engine, and runs a
// script in each with a read-only root file system, as the Kubernetes
// Deployment does: strict on the empty base, project on a base with
// python3 (the test image).
func TestImage(t *testing.T) {
	d := backendtest.Docker(t)
	ctx := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(ctx, "hermes-wasm-exec"), "../cmd/hermes-wasm-exec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	df, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(ctx, "Dockerfile"), df, 0o644))
	for _, dir := range []string{"rootfs/data", "rootfs/tmp"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ctx, dir), 0o755))
	}
	docker := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(d.Docker, args...)
		// The classic builder: the test engine has no BuildKit, and FROM
		// scratch needs no registry.
		cmd.Env = append(append(os.Environ(), d.Env...), "DOCKER_BUILDKIT=0")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "docker %v: %s", args, out)
		return string(out)
	}
	docker("", "build", "--target", "strict", "-t", "hwe-test-image:strict", ctx)
	docker("", "build", "--target", "project", "--build-arg", "PYTHON_BASE="+d.Image, "-t", "hwe-test-image:project", ctx)
	t.Cleanup(func() {
		cmd := exec.Command(d.Docker, "rmi", "-f", "hwe-test-image:strict", "hwe-test-image:project")
		cmd.Env = append(os.Environ(), d.Env...)
		_ = cmd.Run()
	})
	for _, mode := range []string{"strict", "project"} {
		out := docker("import sys\nprint(6 * 7, sys.platform)\n", "run", "--rm", "-i", "--network", "none", "--read-only",
			"--tmpfs", "/tmp:uid=65532,gid=65532", "--tmpfs", "/data:uid=65532,gid=65532", "hwe-test-image:"+mode, "run", "--mode", mode, "-")
		start := strings.Index(out, "{")
		require.GreaterOrEqual(t, start, 0, out)
		var res struct {
			Status, Output, Mode string
		}
		require.NoError(t, json.Unmarshal([]byte(out[start:]), &res), out)
		require.Equal(t, "success", res.Status, out)
		require.Equal(t, mode, res.Mode)
		want := "42 wasi\n"
		if mode == "project" {
			want = "42 linux\n"
		}
		require.Equal(t, want, res.Output)
	}
	// Non-root, as the Deployment requires.
	user := docker("", "image", "inspect", "-f", "{{.Config.User}}", "hwe-test-image:strict")
	require.Equal(t, "65532:65532", strings.TrimSpace(user))
}
