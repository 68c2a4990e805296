# writes
# host needs: tarfile.data_filter
import os, tarfile
with tarfile.open("notes.tar", "w") as t:
    t.add("notes", arcname="notes")
with tarfile.open("notes.tar") as t:
    t.extractall("restored", filter="data")
print(sorted(os.listdir("restored/notes")))
