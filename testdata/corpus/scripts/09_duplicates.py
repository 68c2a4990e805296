import hashlib, os
seen = {}
for root, dirs, files in os.walk("."):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for f in files:
        if f.startswith("."):
            continue
        p = os.path.join(root, f)
        seen.setdefault(hashlib.sha256(open(p, "rb").read()).hexdigest(), []).append(p)
groups = [sorted(v) for v in seen.values() if len(v) > 1]
print(len(groups), "duplicate groups:", sorted(groups))
