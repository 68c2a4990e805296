import threading
sizes = {}
def measure(name):
    sizes[name] = len(open(name).read())
threads = [threading.Thread(target=measure, args=(n,)) for n in ("README.md", "settings.ini", "config.json")]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(sizes.items()))
