import os
with os.popen("ls notes") as f:
    print(sorted(f.read().split()))
