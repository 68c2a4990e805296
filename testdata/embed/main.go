// Command embed is an example of embedding hermes-wasm-exec in another Go
// program, as a separate module would: it replaces web_search with its own
// handler, runs a strict-mode script that calls it, and prints the result
// JSON. runtime/executor's TestEmbedProgram runs it with `go run .`.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

const script = `from hermes_tools import web_search
r = web_search("wasm sandboxes", limit=2)
for hit in r["data"]["web"]:
    print(hit["position"], hit["title"], hit["url"])
`

// search is the embedder's web_search: the same arguments and result
// shape as the built-in tool, answered from a fixed list.
func search(ctx context.Context, args json.RawMessage) map[string]any {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return map[string]any{"success": false, "error": "bad arguments: " + err.Error()}
	}
	hits := []any{}
	for i, title := range []string{"Embedded result one", "Embedded result two", "Embedded result three"} {
		if i == a.Limit {
			break
		}
		hits = append(hits, map[string]any{
			"title":       title + " for " + a.Query,
			"url":         fmt.Sprintf("https://example.com/%d", i+1),
			"description": "served by the embedding program",
			"position":    i + 1,
		})
	}
	return map[string]any{"success": true, "data": map[string]any{"web": hits}}
}

func main() {
	os.Exit(run())
}

func run() int {
	ctx := context.Background()
	cfg := config.Default()
	cfg.CodeExecution.Mode = config.ModeStrict
	cfg.CodeExecution.Timeout = 60

	workdir, err := os.MkdirTemp("", "embed-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workdir)

	ex := executor.New(executor.Options{
		Config: &cfg,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Tools:  map[string]executor.ToolHandler{"web_search": search},
	})
	defer ex.Close(ctx)

	res, err := ex.Execute(ctx, executor.Request{Code: script, Workdir: workdir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(out))
	if res.Status != "success" {
		return 1
	}
	return 0
}
