package nativeengine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// isProcessInJob is kernel32's IsProcessInJob (not in x/sys/windows).
var isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

// inJob reports whether this process is in a job object.
func inJob() bool {
	var in int32
	r, _, _ := isProcessInJob.Call(uintptr(windows.CurrentProcess()), 0, uintptr(unsafe.Pointer(&in)))
	return r != 0 && in != 0
}

// fakePythonMain is the child the engine starts as
// `<test binary> -u RUNNER SCRIPT` on Windows: it talks the wire protocol
// directly, over loopback TCP with HERMES_RPC_TOKEN.
func fakePythonMain(behaviour string) int {
	token := os.Getenv("HERMES_RPC_TOKEN")
	switch behaviour {
	case "roundtrip":
		// Report what the engine gave the child, then make one call and
		// send an exit report.
		info := map[string]any{
			"args":      os.Args[1:],
			"socket":    os.Getenv("HERMES_RPC_SOCKET"),
			"token":     token,
			"inherited": os.Getenv("FAKE_INHERITED"),
			"in_job":    inJob(),
		}
		out, _ := json.Marshal(info)
		fmt.Printf("INFO %s\n", out)
		c, r := fakeDial()
		fmt.Printf("HELLO %s", fakeRoundtrip(c, r, map[string]any{"token": token, "op": "hello"}))
		fmt.Printf("CALL %s", fakeRoundtrip(c, r, map[string]any{"token": token, "tool": "read_file", "args": map[string]any{"path": "hello.txt"}}))
		fmt.Printf("EXIT %s", fakeRoundtrip(c, r, map[string]any{"token": token, "op": "exit",
			"exit": map[string]any{"kind": "exception", "code": 1, "type": "RuntimeError", "message": "fake", "traceback": "Traceback: fake\n"}}))
		return 1

	case "wrong-token":
		// A wrong token on a new connection, then on the connection of a
		// good hello: refused both times, the tool never called.
		wrong := strings.Repeat("0", len(token))
		c, r := fakeDial()
		fmt.Printf("BADHELLO %s", fakeRoundtrip(c, r, map[string]any{"token": wrong, "op": "hello"}))
		fmt.Printf("BADCALL %s", fakeRoundtrip(c, r, map[string]any{"token": wrong, "tool": "read_file", "args": map[string]any{"path": "x"}}))
		c.Close()
		c, r = fakeDial()
		fmt.Printf("HELLO %s", fakeRoundtrip(c, r, map[string]any{"token": token, "op": "hello"}))
		fmt.Printf("BADCALL2 %s", fakeRoundtrip(c, r, map[string]any{"token": wrong, "tool": "read_file", "args": map[string]any{"path": "x"}}))
		fmt.Printf("NOTOKEN %s", fakeRoundtrip(c, r, map[string]any{"tool": "read_file", "args": map[string]any{"path": "x"}}))
		return 0

	case "tree":
		// Start two grandchildren that sleep, learn their pids from
		// them, print "tree child=N grandchildren=A,B ready" and sleep:
		// only the end of the job ends the three. The grandchildren are
		// started once this process is in its job (the engine assigns it
		// right after starting it).
		for deadline := time.Now().Add(10 * time.Second); !inJob(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "never assigned to a job")
				return 90
			}
		}
		var pids []string
		for range 2 {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), fakePythonEnv+"=stay")
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				fmt.Fprintln(os.Stderr, "pipe:", err)
				return 90
			}
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "start:", err)
				return 90
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				fmt.Fprintln(os.Stderr, "grandchild:", err)
				return 91
			}
			pids = append(pids, strings.TrimSpace(strings.TrimPrefix(line, "stay ")))
		}
		fmt.Printf("tree child=%d grandchildren=%s ready\n", os.Getpid(), strings.Join(pids, ","))
		time.Sleep(time.Hour) // stays until the job ends it: not a wait
		return 92

	case "stay":
		fmt.Printf("stay %d\n", os.Getpid())
		time.Sleep(time.Hour) // stays until the job ends it: not a wait
		return 93

	case "exit":
		return 7
	}
	fmt.Fprintf(os.Stderr, "unknown fake python behaviour %q\n", behaviour)
	return 99
}
