# Read once at import: the script may change os.environ afterwards.
_ADDRESS = _os.environ.get("HERMES_RPC_SOCKET", "")
_TOKEN = _os.environ.get("HERMES_RPC_TOKEN", "")
_local = _thread._local()


def _connect():
    import socket
    if not _ADDRESS:
        raise RuntimeError("hermes_tools: HERMES_RPC_SOCKET is not set; this module works only in a script run by hermes-wasm-exec")
    if _ADDRESS.startswith("tcp://"):
        host, _, port = _ADDRESS[len("tcp://"):].rpartition(":")
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(_ADDRESS)
    reader = sock.makefile("rb")
    # Authenticate the connection once; every request carries the token too.
    encode, _ = _json_codec()
    sock.sendall((encode({"token": _TOKEN, "op": "hello"}) + "\n").encode("utf-8", "surrogatepass"))
    if b'"ok"' not in reader.readline():
        sock.close()
        raise RuntimeError("hermes_tools: the host refused this connection (HERMES_RPC_TOKEN does not match)")
    return sock, reader


def _roundtrip(payload):
    # One connection per thread and per process (a forked child must not
    # share its parent's), so calls from threads run in parallel.
    conn = getattr(_local, "conn", None)
    if conn is None or conn[0] != _os.getpid():
        conn = (_os.getpid(),) + _connect()
        _local.conn = conn
    conn[1].sendall(payload)
    line = conn[2].readline()
    if not line.endswith(b"\n"):
        _local.conn = None
        raise RuntimeError("hermes_tools: the connection to the host was closed (the execution is ending)")
    return line
