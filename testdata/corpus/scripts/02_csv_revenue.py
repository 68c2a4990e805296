import csv
from collections import defaultdict
rev = defaultdict(float)
with open("data/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        rev[row["region"]] += int(row["units"]) * float(row["price"])
for region in sorted(rev):
    print(f"{region:6} {rev[region]:8.2f}")
