module github.com/hermes-agent/hermes-wasm-exec

go 1.25.0

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4
	github.com/pmezard/go-difflib v1.0.0
	github.com/stretchr/testify v1.12.1
	github.com/tetratelabs/wazero v1.12.0
	golang.org/x/sys v0.44.0
	gopkg.in/yaml.v3 v3.0.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
