package strict

import (
	"testing"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/stretchr/testify/require"
)

// TestStrictThreads: the WASI interpreter's threads (run one after
// another, wasi_compat.py) give scripts what real threads give them:
// results, exceptions reported as a thread's are, join, nested pools,
// queues with the consumer started first, futures' exceptions, and a
// deadlock is an error at once, not a hang until the timeout.
func TestStrictThreads(t *testing.T) {
	res := run(t, `
import threading, queue
from concurrent.futures import ThreadPoolExecutor, as_completed

out = {}
def work(i):
    out[i] = i * i
ts = [threading.Thread(target=work, args=(i,), name="w%d" % i) for i in range(4)]
for t in ts: t.start()
print("alive before join", any(t.is_alive() for t in ts))
for t in ts: t.join()
print("results", sorted(out.items()), "alive after", any(t.is_alive() for t in ts))

names = []
def named():
    names.append(threading.current_thread().name)
t = threading.Thread(target=named, name="worker-7"); t.start(); t.join()
print("current_thread", names)

def boom():
    raise ValueError("in a thread")
t = threading.Thread(target=boom); t.start(); t.join()
print("after a failing thread")

with ThreadPoolExecutor(2) as outer:
    def inner(n):
        with ThreadPoolExecutor(2) as pool:
            return sum(pool.map(lambda x: x + n, range(3)))
    print("nested", list(outer.map(inner, [0, 10])))

with ThreadPoolExecutor() as pool:
    fs = [pool.submit(lambda: 1 / 0), pool.submit(lambda: "ok")]
    print("futures", sorted(repr(f.exception()) if f.exception() else f.result() for f in as_completed(fs)))

q, got = queue.Queue(), []
def consumer():
    while (item := q.get()) is not None:
        got.append(item)
c = threading.Thread(target=consumer); c.start()
for i in range(3): q.put(i)
q.put(None); c.join()
print("queue", got)

ev = threading.Event()
try:
    ev.wait()
except RuntimeError as e:
    print("deadlock:", str(e).startswith("deadlock:"))
print("timed wait", ev.wait(0.01))
`, nil)
	require.Equal(t, config.StatusSuccess, res.Status, res.Output)
	require.Equal(t, `alive before join True
results [(0, 0), (1, 1), (2, 4), (3, 9)] alive after False
current_thread ['worker-7']
after a failing thread
nested [3, 33]
futures ["ZeroDivisionError('division by zero')", 'ok']
queue [0, 1, 2]
deadlock: True
timed wait False
`, res.Output)
}
