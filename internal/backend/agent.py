# The file agent of a remote backend whose target has python3 (agent.go
# describes the protocol; agentScript in agent.go is the same agent in sh,
# for targets without python). One request per line: "OP ARGS", then the
# path (base64 when OP ends in "64"), then for W the data as one base64
# line. One answer per line: "ok ..." or "err <base64 message>".
import base64, os, stat, sys, tempfile

inp, out = sys.stdin.buffer, sys.stdout.buffer


def info(st):
    return b"%x %d %d %d %d %d" % (st.st_mode, st.st_size, int(st.st_mtime), st.st_nlink, st.st_dev, st.st_ino)


def b64(b):
    return base64.b64encode(b)


def serve(op, args, p):
    if op == b"S":
        return b"ok " + info(os.stat(p))
    if op == b"L":
        return b"ok " + info(os.lstat(p))
    if op == b"K":
        return b"ok " + b64(os.readlink(p))
    if op == b"R":
        limit = int(args[0])
        # Non-blocking open: a FIFO swapped in after the tool's checks must
        # not hang the agent.
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(21, "Is a directory")
            if not stat.S_ISREG(mode):
                raise OSError(22, "Invalid argument: not a regular file")
            os.set_blocking(fd, True)
            return b"ok " + b64(f.read(limit))
    if op == b"D":
        recs = []
        with os.scandir(p) as it:
            for e in it:
                try:
                    recs.append(info(e.stat(follow_symlinks=False)) + b" " + e.name + b"\0")
                except OSError:
                    pass
        return b"ok " + b64(b"".join(recs))
    if op == b"M":
        os.makedirs(p, int(args[0], 8), exist_ok=True)
        if not os.path.isdir(p):
            raise FileExistsError(17, "File exists")
        return b"ok"
    if op == b"W":
        data = base64.b64decode(inp.readline())
        prefix = base64.b64decode(args[0]).rstrip(b"X")
        fd, name = tempfile.mkstemp(prefix=prefix, dir=p)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(name, int(args[1], 8))
        except BaseException:
            os.unlink(name)
            raise
        return b"ok " + b64(os.fsencode(name))
    if op == b"N":
        os.replace(p, base64.b64decode(args[0]))
        return b"ok"
    if op == b"X":
        if os.path.isdir(p) and not os.path.islink(p):
            os.rmdir(p)
        else:
            os.unlink(p)
        return b"ok"
    raise ValueError("unknown operation %r" % op)


def main():
    while True:
        head = inp.readline()
        path = inp.readline()
        if not path.endswith(b"\n"):
            return
        fields = head.split()
        op, args = fields[0], fields[1:]
        p = path[:-1]
        if op.endswith(b"64"):
            op, p = op[:-2], base64.b64decode(p)
        try:
            answer = serve(op, args, p)
        except OSError as e:
            answer = b"err " + b64(os.fsencode(p) + b": " + (e.strerror or str(e)).encode())
        except Exception as e:
            answer = b"err " + b64(str(e).encode())
        out.write(answer + b"\n")
        out.flush()


main()
