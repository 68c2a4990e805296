package native_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hermes-agent/hermes-wasm-exec/native"
)

// Which python project mode would run for a working dir, in a given
// environment: here one without PATH, VIRTUAL_ENV or CONDA_PREFIX, so no
// python is found and project mode would use the embedded interpreter.
// With os.Getenv it is the host's own answer, as `doctor` shows it.
func Example() {
	dir, err := os.MkdirTemp("", "native-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	noEnv := func(string) string { return "" }
	choice := native.ResolveIn(context.Background(), noEnv, dir, "")
	fmt.Println(choice.Path == "", len(choice.Skipped))
	fmt.Println(choice.Describe())
	fmt.Println(native.TransportUnix, native.TransportTCP)
	// Output:
	// true 0
	// no usable python on this host: project mode runs the embedded WASI CPython over the session dir (standard library only)
	// unix tcp
}
