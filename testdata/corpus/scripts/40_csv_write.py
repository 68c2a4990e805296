# writes
import csv
rows = list(csv.DictReader(open("data/sales.csv")))
with open("summary.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["product", "units"])
    for p in sorted({r["product"] for r in rows}):
        w.writerow([p, sum(int(r["units"]) for r in rows if r["product"] == p)])
print(open("summary.csv").read())
