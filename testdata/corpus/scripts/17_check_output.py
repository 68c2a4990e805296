import subprocess
print(subprocess.check_output("wc -l < logs/app.log", shell=True).decode().strip())
