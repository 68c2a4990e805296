# writes
import os
os.makedirs("build/a/b", exist_ok=True)
open("build/a/b/x.txt", "w").write("x")
os.rename("build/a/b/x.txt", "build/a/y.txt")
os.remove("build/a/y.txt")
open("build/a/kept.txt", "w").write("kept")
print(sorted(os.listdir("build/a")))
