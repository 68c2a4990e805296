package strict

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
)

// openLoop opens path until the guest is refused, keeping every descriptor,
// and prints how many it got and the errno; then closes them all and opens
// path once more.
const openLoop = `
import errno, os
def hoard(path, most=%d):
    fds = []
    try:
        while len(fds) < most:
            fds.append(os.open(path, os.O_RDONLY))
        print(path, "never refused")
    except OSError as e:
        print(path, len(fds) <= %d, errno.errorcode[e.errno])
    for fd in fds:
        os.close(fd)
    os.close(os.open(path, os.O_RDONLY))
`

// TestStrictOpenFilesLimit: a guest holds at most maxOpenFiles descriptors,
// over all its mounts, and gets EMFILE past that, as a native python does
// at its process limit. Unlimited, a guest holding 20,000 files of its
// staging dir took every file descriptor of the executor's process (a
// serve's other sessions then failed with "too many open files"), and one
// opening the read-only standard library or zone files in a loop grew the
// host by about 250 bytes a descriptor, outside its memory cap (3 GB in a
// 5-minute run).
func TestStrictOpenFilesLimit(t *testing.T) {
	const most = 3 * maxOpenFiles
	code := fmt.Sprintf(openLoop, most, maxOpenFiles) + `
open("f", "w").close()
hoard("f")
hoard("/usr/share/zoneinfo/UTC")
hoard("/usr/local/lib/python313.zip")
hoard(".")
a = [os.open("f", os.O_RDONLY) for _ in range(600)]
try:
    b = [os.open("/usr/share/zoneinfo/UTC", os.O_RDONLY) for _ in range(600)]
    print("mounts share the limit: False")
except OSError as e:
    print("mounts share the limit:", errno.errorcode[e.errno] == "EMFILE")
`
	res := run(t, code, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, "f True EMFILE\n"+
		"/usr/share/zoneinfo/UTC True EMFILE\n"+
		"/usr/local/lib/python313.zip True EMFILE\n"+
		". True EMFILE\n"+
		"mounts share the limit: True\n", res.Output)
}

// TestStrictOpenFilesLimitKernel: a kernel's descriptors stay open across
// its cells, and so does the limit; closing them gives their places back.
func TestStrictOpenFilesLimitKernel(t *testing.T) {
	e := testEngine(t)
	k := startKernel(t, e, engine.KernelSpec{Env: kernelEnv}, false)
	okCell(t, k, `import errno, os
open("f", "w").close()
held = [os.open("f", os.O_RDONLY) for _ in range(1000)]`)
	require.Equal(t, "EMFILE\n", okCell(t, k, `
try:
    held += [os.open("f", os.O_RDONLY) for _ in range(100)]
    print("no limit")
except OSError as e:
    print(errno.errorcode[e.errno])`))
	require.Equal(t, "100\n", okCell(t, k, `
for fd in held: os.close(fd)
held = [os.open("f", os.O_RDONLY) for _ in range(100)]
print(len(held))`))
}
