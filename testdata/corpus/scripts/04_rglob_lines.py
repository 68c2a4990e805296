from pathlib import Path
py = sorted(Path(".").rglob("*.py"))
for p in py:
    print(p.as_posix(), len(p.read_text().splitlines()))
