package pyodideassets

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
)

// recipeFS is the build recipe: build.sh, its pins (recipe.env), the
// built-in C module and the helpers. Its hash is pinned as [RecipeSHA256].
//
//go:embed cpython
var recipeFS embed.FS

// RecipeHash returns the hex sha256 of the recipe: every file under
// cpython/, by name and content, in name order. Any change to the recipe
// (a pinned version, a flag, the C module) changes it; [Check] compares it
// with [RecipeSHA256].
func RecipeHash() string {
	h := sha256.New()
	_ = fs.WalkDir(recipeFS, "cpython", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := recipeFS.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// Recipe returns the embedded recipe: the directory cpython with build.sh,
// its pins (recipe.env), the built-in C module and the helpers, so a binary
// can rebuild what it runs (pyodide-assets/internal/assetbuild does).
func Recipe() fs.FS { return recipeFS }
