# writes
import hashlib, json, pathlib
manifest = {p.as_posix(): hashlib.sha1(p.read_bytes()).hexdigest()[:10] for p in sorted(pathlib.Path("data").iterdir())}
pathlib.Path("MANIFEST.json").write_text(json.dumps(manifest, indent=1))
print(len(manifest), sorted(manifest)[0])
