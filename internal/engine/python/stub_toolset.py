

def _apply_tool_set():
    # The variable lists the tools enabled in this execution (absent: all
    # seven). The others get no function, so importing one raises
    # ImportError; the host refuses their calls whatever this module holds.
    global __all__
    names = _os.environ.get("HERMES_RPC_TOOLS")
    if names is None:
        return
    enabled = set(names.split(","))
    namespace = globals()
    for name in _TOOL_NAMES:
        if name not in enabled:
            namespace.pop(name, None)
    __all__ = [n for n in __all__ if n in enabled or n not in _TOOL_NAMES]


_apply_tool_set()
del _apply_tool_set
