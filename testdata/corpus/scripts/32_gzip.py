# writes
import gzip, shutil
with open("logs/app.log", "rb") as src, gzip.open("logs/app.log.gz", "wb") as dst:
    shutil.copyfileobj(src, dst)
print(len(gzip.open("logs/app.log.gz").read().splitlines()))
