import subprocess
r = subprocess.run(["ls", "-1", "data"], capture_output=True, text=True, check=True)
print(r.returncode, r.stdout.split())
