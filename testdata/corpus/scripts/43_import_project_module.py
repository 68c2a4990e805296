import sys
sys.path.insert(0, "src")
from inventory import stock, VERSION
print(VERSION, stock.available("widget"), stock.available("gadget"))
