# The relay of project mode on a remote backend (docs/backends/README.md).
# It runs in the target as `python3 -u -c <this>`, reads one JSON line from
# stdin (the files to stage, the argv, the environment to add), stages the
# files in a private dir, listens on a Unix socket there for the script's
# hermes_tools connections, and starts the script's python in a session of
# its own with its stdout and stderr on pipes. Then it multiplexes all of
# it over its own stdin and stdout, in frames of
#     kind (1 byte) | stream id (4 bytes, big-endian) | length (4) | data
# To the host: o/e = script stdout/stderr bytes, c = a tool connection
# opened, d = bytes from a connection, x = a connection closed, q = the
# script's python exited (data: JSON) and everything it printed was sent.
# From the host: d = bytes to a connection, x = close it, k = stop the
# script's process group (data: grace in seconds). EOF on stdin stops it
# too. A tool call is one round trip of the backend's stream; nothing polls.
import sys

try:
    import json
    import os
    import shutil
    import signal
    import socket
    import struct
    import subprocess
    import tempfile
    import threading
except ImportError as e:
    # python3-minimal and the like: no json, no shutil.
    sys.stderr.write("hermes-relay: this python lacks part of its standard library (%s)\n" % e)
    sys.exit(120)  # relayIncompletePython in remote.go

_HEAD = struct.Struct(">cII")



def main():
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    bundle = json.loads(inp.readline())
    d = tempfile.mkdtemp(prefix="hermes-remote-")

    def terminated(signum, frame):
        # Stopped from outside (the host's tree kill): the private dir
        # goes first; the group is the host's business.
        shutil.rmtree(d, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    try:
        for name, content in bundle["files"].items():
            fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(content)
        run(bundle, d, inp, out)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    # Not a normal exit: the thread reading stdin holds its lock.
    os._exit(0)


def run(bundle, d, inp, out):
    path = os.path.join(d, "rpc.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    os.chmod(path, 0o600)
    ls.listen(64)

    env = dict(os.environ)
    env.update(bundle["env"])
    env["HERMES_RPC_SOCKET"] = path
    pp = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = d + (os.pathsep + pp if pp else "")
    files = bundle["files"]
    argv = [sys.executable, "-u"] + [os.path.join(d, a) if a in files else a for a in bundle["argv"]]

    wlock = threading.Lock()

    def send(kind, sid, data=b""):
        with wlock:
            out.write(_HEAD.pack(kind, sid, len(data)) + data)
            out.flush()

    o_r, o_w = os.pipe()
    e_r, e_w = os.pipe()
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=o_w, stderr=e_w, env=env,
                                 start_new_session=True, close_fds=True)
    except OSError as e:
        os.close(o_w)
        os.close(e_w)
        send(b"e", 0, ("cannot start %s: %s\n" % (argv[0], e)).encode())
        send(b"q", 0, json.dumps({"code": 127}).encode())
        return
    os.close(o_w)
    os.close(e_w)

    def pump(fd, kind):
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                os.close(fd)
                return
            send(kind, 0, data)

    pumps = [threading.Thread(target=pump, args=(fd, k), daemon=True) for fd, k in ((o_r, b"o"), (e_r, b"e"))]
    for t in pumps:
        t.start()

    conns = {}
    clock = threading.Lock()
    next_id = [0]

    def serve_conn(sid, c):
        while True:
            try:
                data = c.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            send(b"d", sid, data)
        with clock:
            conns.pop(sid, None)
        send(b"x", sid)

    def accept():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            with clock:
                next_id[0] += 1
                sid = next_id[0]
                conns[sid] = c
            send(b"c", sid)
            threading.Thread(target=serve_conn, args=(sid, c), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()

    def stop(grace):
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except OSError:
            return
        try:
            child.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass

    def host():
        while True:
            head = inp.read(_HEAD.size)
            if len(head) < _HEAD.size:
                break
            kind, sid, n = _HEAD.unpack(head)
            data = inp.read(n) if n else b""
            if kind == b"d":
                with clock:
                    c = conns.get(sid)
                if c is not None:
                    try:
                        c.sendall(data)
                    except OSError:
                        pass
            elif kind == b"x":
                with clock:
                    c = conns.pop(sid, None)
                if c is not None:
                    try:
                        c.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            elif kind == b"k":
                stop(float(data or b"5"))
                return
        stop(1.0)

    threading.Thread(target=host, daemon=True).start()

    code = child.wait()
    # The group is done with: what it left running goes too, so the
    # output pipes reach EOF.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except OSError:
        pass
    for t in pumps:
        t.join(2.0)
    ls.close()
    report = {"code": code}
    if code < 0:
        report = {"code": 128 - code, "signal": -code}
    send(b"q", 0, json.dumps(report).encode())


main()
