for i in range(3000):
    print("line", i, "of the flood", "x" * 40)
