# writes
import json
customers = json.load(open("data/customers.json"))
lines = ["# Customers", ""] + [f"- {c['name']} ({c['tier']})" for c in customers]
with open("report.md", "w") as f:
    f.write("\n".join(lines) + "\n")
print(open("report.md").read())
