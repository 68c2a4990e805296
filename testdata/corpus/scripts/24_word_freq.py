import re
from collections import Counter
words = re.findall(r"[a-z]+", open("README.md").read().lower())
print(Counter(words).most_common(3))
