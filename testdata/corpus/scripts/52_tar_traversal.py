# host needs: tarfile.data_filter
import io, os, tarfile
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as t:
    data = b"escaped"
    info = tarfile.TarInfo("../escape.txt")
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
buf.seek(0)
with tarfile.open(fileobj=buf) as t:
    try:
        t.extractall("unpacked", filter="data")
    except tarfile.FilterError as e:
        print(type(e).__name__)
print(os.path.exists("escape.txt"))
