

def _request(req):
    encode, decode = _json_codec()
    if _TOKEN is not None:
        req["token"] = _TOKEN
    line = encode(req) + "\n"
    return decode(_roundtrip(line.encode("utf-8", "surrogatepass")).decode("utf-8", "replace"))


def _call(tool, args):
    return _request({"tool": tool, "args": args})


def _report_exit(report):
    _request({"op": "exit", "exit": report})
