import queue, threading
q, out = queue.Queue(), []
def worker():
    while True:
        item = q.get()
        if item is None:
            q.task_done()
            break
        out.append(item.upper())
        q.task_done()
workers = [threading.Thread(target=worker) for _ in range(2)]
for w in workers: w.start()
for line in open("notes/ideas.txt"):
    q.put(line.strip())
for _ in workers: q.put(None)
q.join()
print(sorted(out))
