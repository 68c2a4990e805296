"""Drives `hermes-wasm-exec serve` from Python the way an agent host would:
a session kernel, a delegated web_search, an approval and live output. Usage:
serve_demo.py MODE COMMAND... (the command that starts the server)."""
import json
import sys

from hermes_client import HermesClient

mode, argv = sys.argv[1], sys.argv[2:]
asked = []


def approve(params):
    asked.append(params["type"])
    return {"approved": False, "scope": "once"}


def web_search(args):
    return {"success": True, "data": {"web": [
        {"title": "From the host: " + args["query"], "url": "https://example.com/", "description": "", "position": 1}]}}


streamed = {"stdout": "", "stderr": ""}


def on_output(params):
    streamed[params["stream"]] += params["text"]


client = HermesClient(argv, approve=approve, tools={"web_search": web_search}, on_output=on_output)
out = {}
r = client.execute("x = 41", session="demo", mode=mode)
r = client.execute("x += 1\nprint(x)", session="demo", mode=mode)
out["state"] = [r["output"].strip(), r["kernel"]["execution_count"]]
client.call("open_session", session="demo", delegate_tools=["web_search"])
r = client.execute("from hermes_tools import web_search\nprint(web_search('wasm')['data']['web'][0]['title'])",
                   session="demo", mode=mode)
out["delegated"] = r["output"].strip()
r = client.execute("print('should not run')", session="gw", mode=mode, kind="gateway")
out["blocked"] = [r.get("blocked", False), r["output"] == "" or "should not run" not in r["output"]]
out["asked"] = asked
r = client.execute("import sys\nprint('live')\nsys.stderr.write('err\\n')", session="demo", mode=mode, stream=True)
out["streamed"] = [r["output"], streamed]
client.close()
print(json.dumps(out))
