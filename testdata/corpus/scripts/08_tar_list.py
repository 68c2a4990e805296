# writes
import tarfile
with tarfile.open("logs.tar.gz", "w:gz") as t:
    t.add("logs", arcname="logs")
with tarfile.open("logs.tar.gz") as t:
    print(sorted(m.name for m in t.getmembers()))
