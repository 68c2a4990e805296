import re
from collections import Counter
hours = Counter(re.match(r"\S+ (\d\d):", l).group(1) for l in open("logs/app.log"))
print(sorted(hours.items())[:5])
