from datetime import datetime
stamps = [datetime.strptime(l[:19], "%Y-%m-%d %H:%M:%S") for l in open("logs/app.log")]
print(min(stamps), max(stamps), (max(stamps) - min(stamps)).days)
