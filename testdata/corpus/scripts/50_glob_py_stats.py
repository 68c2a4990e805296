import ast, pathlib
funcs = []
for p in sorted(pathlib.Path("src").rglob("*.py")):
    funcs += [n.name for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.FunctionDef)]
print(sorted(funcs))
