package nativeengine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// fakePythonEnv selects a behaviour of the test binary acting as the
// engine's python child (see fakePythonMain, per platform). It is only ever set in the
// child's environment (job.Env), never in the test process's.
const fakePythonEnv = "HERMES_FAKE_PYTHON"

// fakeMarker is the file (in the child's working dir) the host's tool func
// creates when a call has reached it, for behaviours that must know.
const fakeMarker = "tool-call-arrived"

func TestMain(m *testing.M) {
	if b := os.Getenv(fakePythonEnv); b != "" {
		os.Exit(fakePythonMain(b))
	}
	os.Exit(testenv.MainCheckingCgroups(m.Run))
}

func fakeDial() (net.Conn, *bufio.Reader) {
	c, err := dialAddress(os.Getenv("HERMES_RPC_SOCKET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(89)
	}
	return c, bufio.NewReader(c)
}

func fakeRoundtrip(c net.Conn, r *bufio.Reader, req map[string]any) string {
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return fmt.Sprintf("write error: %v\n", err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return fmt.Sprintf("read error: %v\n", err)
	}
	return line
}
