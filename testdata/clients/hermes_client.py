"""A minimal Python client for `hermes-wasm-exec serve` (JSON-RPC 2.0, one
JSON object per line on the server's stdin/stdout).

    client = HermesClient(["hermes-wasm-exec", "serve"])
    r = client.execute("x = 41", session="s1", mode="strict")
    r = client.execute("x += 1; print(x)", session="s1", mode="strict")
    print(r["output"], r["kernel"]["execution_count"])   # 42, 2
    client.close()

Server-to-client requests are answered by callbacks: `approve(params)`
returns {"approved": bool, "scope": "once"|"session"|"always"}, and
`tools[name](args)` answers the `tool_call` of a tool delegated with
`delegate_tools`, and `on_output(params)` gets the `output` notifications of
an `execute` sent with `stream=True` ({"id", "stream", "text"}), before its
result. Standard library only; one call at a time per client
(use one client per thread, or extend the id bookkeeping).
"""
import itertools
import json
import subprocess


class HermesError(Exception):
    pass


class HermesClient:
    def __init__(self, argv, approve=None, tools=None, env=None, on_output=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True, encoding="utf-8", bufsize=1)
        self.approve = approve
        self.tools = tools or {}
        self.on_output = on_output
        self.ids = itertools.count(1)

    def _send(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def call(self, method, **params):
        rid = next(self.ids)
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise HermesError("the server closed its output")
            msg = json.loads(line)
            if "method" in msg and "id" not in msg:  # a notification: a streamed call's output
                if msg["method"] == "output" and self.on_output is not None:
                    self.on_output(msg["params"])
                continue
            if "method" in msg:  # a request from the server
                self._answer(msg)
                continue
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                raise HermesError("%s: %s" % (msg["error"].get("code"), msg["error"].get("message")))
            return msg["result"]

    def _answer(self, req):
        method, params = req["method"], req.get("params") or {}
        try:
            if method == "approve" and self.approve is not None:
                result = self.approve(params)
            elif method == "tool_call" and params.get("tool") in self.tools:
                result = self.tools[params["tool"]](params.get("args") or {})
            else:
                self._send({"jsonrpc": "2.0", "id": req["id"],
                            "error": {"code": -32601, "message": "not handled: " + method}})
                return
            self._send({"jsonrpc": "2.0", "id": req["id"], "result": result})
        except Exception as e:
            self._send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32000, "message": str(e)}})

    def execute(self, code, **params):
        return self.call("execute", code=code, **params)

    def close(self):
        try:
            self.call("shutdown")
        except HermesError:
            pass
        self.proc.wait(timeout=30)
