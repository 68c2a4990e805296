import json
cfg = json.load(open("config.json"))
raise ValueError("bad workers: %d" % cfg["workers"])
