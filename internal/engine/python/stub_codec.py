
_codec = None


def _json_codec():
    # The C encoder and scanner, called directly: json.dumps and json.loads
    # add layers of Python around them that cost more than the channel.
    global _codec
    if _codec is None:
        import json
        import json.encoder
        import json.scanner
        if json.encoder.c_make_encoder is not None:
            encoder = json.encoder.c_make_encoder(
                None, json.JSONEncoder(ensure_ascii=False).default, json.encoder.encode_basestring,
                None, ":", ",", False, False, True)
            encode = lambda obj: "".join(encoder(obj, 0))
        else:
            encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        scan = json.scanner.make_scanner(json.JSONDecoder())

        def decode(text):
            try:
                return scan(text, 0)[0]
            except StopIteration:
                raise RuntimeError("hermes_tools: malformed response from the host: %r" % text[:200]) from None

        _codec = (encode, decode)
    return _codec

