package hostfuncs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/hermes-agent/hermes-wasm-exec/hostfuncs"
)

// The tools as Go functions: a call names the tool and gives its
// arguments as a JSON object (as a script's keyword arguments), and the
// result is the tool's result object. File paths are relative to the
// working dir.
func Example() {
	dir, err := os.MkdirTemp("", "hostfuncs-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	tools, err := hostfuncs.New(hostfuncs.Options{Workdir: dir})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	w := tools.Call(ctx, "write_file", json.RawMessage(`{"path": "notes.txt", "content": "alpha\nbeta\n"}`))
	fmt.Println("write error:", w["error"])
	r := tools.Call(ctx, "read_file", json.RawMessage(`{"path": "notes.txt"}`))
	fmt.Println(r["total_lines"])
	fmt.Println(r["content"])
	s := tools.Call(ctx, "search_files", json.RawMessage(`{"pattern": "beta", "target": "content"}`))
	fmt.Println(s["total_count"])
	// Output:
	// write error: <nil>
	// 2
	// 1|alpha
	// 2|beta
	// 1
}
