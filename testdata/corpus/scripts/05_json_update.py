# writes
import json
cfg = json.load(open("config.json"))
cfg["workers"] *= 2
cfg["features"]["auth"] = True
json.dump(cfg, open("config.json", "w"), indent=2, sort_keys=True)
print(open("config.json").read())
