//go:build unix

package nativeengine

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// fakePythonMain is the child the engine starts as
// `<test binary> -u RUNNER SCRIPT`: it talks the wire protocol directly.
// The Windows behaviours are in fakepython_windows_test.go.
func fakePythonMain(behaviour string) int {
	switch behaviour {
	case "roundtrip":
		// Report what the engine gave the child, then make one call and
		// send an exit report.
		cwd, _ := os.Getwd()
		info := map[string]any{
			"args":       os.Args[1:],
			"cwd":        cwd,
			"pythonpath": os.Getenv("PYTHONPATH"),
			"socket":     os.Getenv("HERMES_RPC_SOCKET"),
			"token":      os.Getenv("HERMES_RPC_TOKEN"),
			"inherited":  os.Getenv("FAKE_INHERITED"),
			"pgid_is_pid": func() bool {
				pgid, err := syscall.Getpgid(0)
				return err == nil && pgid == os.Getpid()
			}(),
		}
		if len(os.Args) == 4 {
			script, _ := os.ReadFile(os.Args[3])
			info["script"] = string(script)
			if fi, err := os.Stat(filepath.Dir(os.Args[2])); err == nil {
				info["dirmode"] = fmt.Sprintf("%o", fi.Mode().Perm())
			}
			names := []string{}
			entries, _ := os.ReadDir(filepath.Dir(os.Args[2]))
			for _, e := range entries {
				names = append(names, e.Name())
			}
			info["files"] = names
		}
		out, _ := json.Marshal(info)
		fmt.Printf("INFO %s\n", out)
		c, r := fakeDial()
		fmt.Printf("CALL %s", fakeRoundtrip(c, r, map[string]any{"token": os.Getenv("HERMES_RPC_TOKEN"), "tool": "read_file", "args": map[string]any{"path": "hello.txt"}}))
		fmt.Printf("EXIT %s", fakeRoundtrip(c, r, map[string]any{"token": os.Getenv("HERMES_RPC_TOKEN"), "op": "exit",
			"exit": map[string]any{"kind": "exception", "code": 1, "type": "RuntimeError", "message": "fake", "traceback": "Traceback: fake\n"}}))
		return 1

	case "dies-mid-call":
		// Send a call the host blocks on, wait until it has arrived, die.
		c, _ := fakeDial()
		req, _ := json.Marshal(map[string]any{"token": os.Getenv("HERMES_RPC_TOKEN"), "tool": "terminal", "args": map[string]any{"command": "sleep 100"}})
		if _, err := c.Write(append(req, '\n')); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return 90
		}
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(fakeMarker); err == nil {
				fmt.Println("call arrived, dying")
				return 3
			}
		}
		fmt.Fprintln(os.Stderr, "the call never arrived")
		return 91

	case "garbage":
		c, r := fakeDial()
		if _, err := c.Write([]byte("this is not json\n")); err != nil {
			return 90
		}
		line, err := r.ReadString('\n')
		fmt.Printf("got: %s (err %v)\n", strings.TrimSpace(line), err)
		c.Write([]byte(`{"token": "` + os.Getenv("HERMES_RPC_TOKEN") + `", "tool": "read_f`))
		c.Close()
		return 0

	case "sleep":
		time.Sleep(60 * time.Second) // a child that hangs until the engine kills it: not a wait
		return 92

	case "ignores-sigterm", "sleep-ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Printf("pid=%d\n", os.Getpid())
		time.Sleep(60 * time.Second) // a child that outlives SIGTERM until the SIGKILL: not a wait
		return 93

	case "grandchild", "escapes-group":
		// Start another copy of this binary that ignores SIGTERM, print
		// both pids, exit at once. "escapes-group" puts the grandchild in
		// a session of its own, out of the engine's process group.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fakePythonEnv+"=sleep-ignore-term")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if behaviour == "escapes-group" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start:", err)
			return 90
		}
		fmt.Printf("child=%d grandchild=%d\n", os.Getpid(), cmd.Process.Pid)
		return 0

	case "fd-output":
		cmd := exec.Command("sh", "-c", "echo from-grandchild; echo grandchild-stderr >&2")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "sh:", err)
			return 90
		}
		os.Stdout.WriteString("from-child-stdout\n")
		os.Stderr.WriteString("from-child-stderr\n")
		return 0

	case "big-output":
		// 4 MiB to stdout and 1 MiB to stderr, interleaved.
		line := []byte(strings.Repeat("o", 1023) + "\n")
		eline := []byte(strings.Repeat("e", 1023) + "\n")
		for i := 0; i < 4096; i++ {
			os.Stdout.Write(line)
			if i%4 == 0 {
				os.Stderr.Write(eline)
			}
		}
		return 0

	case "exit":
		return 7
	}
	fmt.Fprintf(os.Stderr, "unknown fake python behaviour %q\n", behaviour)
	return 99
}
