import difflib, json
old = open("config.json").read().splitlines()
new = json.dumps({**json.load(open("config.json")), "workers": 8}).splitlines()
print("\n".join(difflib.unified_diff(old, new, "a", "b", lineterm="")))
