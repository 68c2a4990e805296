

def json_parse(text):
    """Parse JSON leniently: strips a leading BOM and allows control characters in strings."""
    import json as _json
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        raise TypeError("json_parse expects a str, got %s (tool results are already dicts)" % type(text).__name__)
    return _json.loads(text.lstrip("\ufeff"), strict=False)


def shell_quote(s):
    """Quote s for safe use as one word in a terminal() command."""
    import shlex
    return shlex.quote(str(s))


def retry(fn, max_attempts=3, delay=2):
    """Call fn() up to max_attempts times, sleeping delay, 2*delay, ... between tries; re-raise the last error."""
    import time
    last = None
    for attempt in range(max_attempts):
        try:
            return fn()
        except Exception as e:
            last = e
            if attempt + 1 < max_attempts:
                time.sleep(delay * (2 ** attempt))
    if last is None:
        raise ValueError("retry: max_attempts must be at least 1")
    raise last
