# writes
import os, zipfile
with zipfile.ZipFile("backup.zip", "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk("data"):
        for f in sorted(files):
            z.write(os.path.join(root, f))
with zipfile.ZipFile("backup.zip") as z:
    print(sorted(z.namelist()))
