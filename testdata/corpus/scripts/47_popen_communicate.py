import subprocess
p = subprocess.Popen(["sort"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
out, _ = p.communicate("pear\napple\nfig\n")
print(out.split(), p.returncode)
