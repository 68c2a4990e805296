import os
from collections import Counter
exts, total = Counter(), 0
for root, dirs, files in os.walk("."):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for f in files:
        exts[os.path.splitext(f)[1] or f] += 1
        total += os.path.getsize(os.path.join(root, f))
print(sum(exts.values()), "files,", total, "bytes")
print(sorted(exts.items()))
