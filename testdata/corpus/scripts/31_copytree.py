# writes
import os, shutil
shutil.copytree("notes", "backup/notes")
print(sorted(os.listdir("backup/notes")))
