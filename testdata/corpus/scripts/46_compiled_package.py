# differs: only pure-Python packages load in the sandbox
try:
    import fixturepkg.speedups
    print("loaded")
except ImportError as e:
    print("ImportError:", "compiled extension" in str(e), e.name)
