import csv, statistics
units = [int(r["units"]) for r in csv.DictReader(open("data/sales.csv"))]
print(statistics.mean(units), statistics.median(units), max(units))
