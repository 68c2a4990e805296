import fixturepkg
print(fixturepkg.greet("corpus"), fixturepkg.__name__)
