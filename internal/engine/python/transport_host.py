import _hermes_host
_TOKEN = None
# One call per request: the host runs the tool while this thread waits in
# the wasm import, so no lock or framing is needed.
_roundtrip = _hermes_host.call
