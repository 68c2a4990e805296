import asyncio
async def size(p):
    return p, await asyncio.to_thread(lambda: len(open(p).read()))
async def main():
    return await asyncio.gather(*(size(p) for p in ("README.md", "settings.ini")))
print(sorted(asyncio.run(main())))
