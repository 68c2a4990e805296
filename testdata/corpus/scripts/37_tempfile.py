import os, tempfile
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "scratch.txt")
    open(p, "w").write(open("notes/ideas.txt").read())
    print(open(p).read().split(), os.path.isdir(d))
print(os.path.exists(d))
