package backend

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"
)

func TestDevDocker(t *testing.T) {
	if os.Getenv("DEVDOCKER") == "" {
		t.Skip()
	}
	start := time.Now()
	b, err := NewDocker(context.Background(), DockerOptions{Image: "hwdev:py", ClientEnv: []string{"DOCKER_HOST=unix:///tmp/hwdev/d.sock"}, Env: []string{"FWD=secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("new", time.Since(start), b.Target(), b.Cwd())
	var out bytes.Buffer
	start = time.Now()
	p, _ := b.Start(context.Background(), Command{Shell: "echo $FWD $PATH; pwd; python3 -c 'print(6*7)'", Stdout: &out, Stderr: &out})
	code, err := p.Wait()
	t.Log(time.Since(start), code, err, out.String())
	f := b.FS()
	start = time.Now()
	_, err = f.Stat("/etc/passwd")
	t.Log("first stat", time.Since(start), err)
	start = time.Now()
	for i := 0; i < 100; i++ {
		_, err = f.ReadFile("/etc/passwd")
	}
	t.Log("read avg", time.Since(start)/100, err)
	start = time.Now()
	b.Close()
	t.Log("close", time.Since(start))
}
