import subprocess
try:
    subprocess.run("exit 4", shell=True, check=True)
except subprocess.CalledProcessError as e:
    print("failed with", e.returncode)
