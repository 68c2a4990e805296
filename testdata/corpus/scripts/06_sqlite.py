# writes
import csv, sqlite3
db = sqlite3.connect("analytics.db")
db.execute("create table sales (region text, units int)")
with open("data/sales.csv") as f:
    db.executemany("insert into sales values (?, ?)", ((r["region"], int(r["units"])) for r in csv.DictReader(f)))
db.commit()
for row in db.execute("select region, sum(units) from sales group by region order by region"):
    print(*row)
db.close()
import os
print(os.path.exists("analytics.db"))
