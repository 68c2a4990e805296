import hashlib, glob
from concurrent.futures import ThreadPoolExecutor
files = sorted(glob.glob("notes/*"))
with ThreadPoolExecutor(max_workers=4) as ex:
    digests = list(ex.map(lambda p: hashlib.md5(open(p, "rb").read()).hexdigest()[:8], files))
print(list(zip(files, digests)))
