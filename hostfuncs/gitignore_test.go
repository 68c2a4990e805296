package hostfuncs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGitignoreMatch(t *testing.T) {
	type check struct {
		path  string
		isDir bool
		want  bool
	}
	tests := []struct {
		name   string
		rules  string
		checks []check
	}{
		{"comments and blanks", "# *.go\n\n   \n*.log\n", []check{
			{"a.go", false, false}, {"x.log", false, true}, {"# *.go", false, false},
		}},
		{"escaped hash and bang", "\\#notes\n\\!important\n", []check{
			{"#notes", false, true}, {"!important", false, true}, {"important", false, false},
		}},
		{"basename at any depth", "*.pyc\n", []check{
			{"a.pyc", false, true}, {"x/y/a.pyc", false, true}, {"a.py", false, false},
		}},
		{"negation", "*.log\n!keep.log\n", []check{
			{"a.log", false, true}, {"keep.log", false, false}, {"sub/keep.log", false, false},
		}},
		{"last rule wins", "!keep.log\n*.log\n", []check{{"keep.log", false, true}}},
		{"dir only", "build/\n", []check{
			{"build", true, true}, {"build", false, false}, {"src/build", true, true},
		}},
		{"leading slash anchors", "/todo.txt\n", []check{
			{"todo.txt", false, true}, {"sub/todo.txt", false, false},
		}},
		{"middle slash anchors", "doc/frotz\n", []check{
			{"doc/frotz", true, true}, {"a/doc/frotz", true, false},
		}},
		{"star does not cross slash", "/src/*.c\n", []check{
			{"src/a.c", false, true}, {"src/x/a.c", false, false},
		}},
		{"question mark", "file?.txt\n", []check{
			{"file1.txt", false, true}, {"file12.txt", false, false}, {"file.txt", false, false},
		}},
		{"character classes", "log[0-9].txt\ntmp[!a].x\n", []check{
			{"log5.txt", false, true}, {"logx.txt", false, false}, {"tmpb.x", false, true}, {"tmpa.x", false, false},
		}},
		{"leading double star", "**/cache\n", []check{
			{"cache", true, true}, {"a/b/cache", true, true}, {"a/cachex", true, false},
		}},
		{"trailing double star", "vendor/**\n", []check{
			{"vendor/a.go", false, true}, {"vendor/x/y.go", false, true}, {"vendor", true, false},
		}},
		{"middle double star", "a/**/b.txt\n", []check{
			{"a/b.txt", false, true}, {"a/x/y/b.txt", false, true}, {"c/a/b.txt", false, false},
		}},
		{"trailing spaces trimmed", "foo.txt   \n", []check{{"foo.txt", false, true}}},
		{"escaped trailing space kept", "bar\\ \n", []check{{"bar ", false, true}, {"bar", false, false}}},
		{"braces are literal", "{a,b}.txt\n", []check{{"{a,b}.txt", false, true}, {"a.txt", false, false}}},
		{"crlf lines", "*.tmp\r\n!x.tmp\r\n", []check{{"a.tmp", false, true}, {"x.tmp", false, false}}},
		{"lone slash and bang ignored", "/\n!\n", []check{{"a", false, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stack := ignoreStack{}.push(parseGitignore("", []byte(tc.rules)))
			for _, c := range tc.checks {
				assert.Equal(t, c.want, stack.ignored(c.path, c.isDir), "path %q dir=%v", c.path, c.isDir)
			}
		})
	}
}

func TestGitignoreNested(t *testing.T) {
	root := parseGitignore("", []byte("*.log\n/build/\nsecret/\n"))
	sub := parseGitignore("sub", []byte("!keep.log\n*.md\n/local.txt\n"))
	stack := ignoreStack{}.push(root).push(sub)
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"a.log", false, true},
		{"sub/a.log", false, true},
		{"sub/keep.log", false, false}, // deeper file re-includes
		{"keep.log", false, true},      // sub's rules do not apply outside sub
		{"sub/x.md", false, true},
		{"x.md", false, false},
		{"sub/local.txt", false, true}, // anchored to sub
		{"sub/deeper/local.txt", false, false},
		{"build", true, true},
		{"sub/build", true, false},
		{"secret/keep.log", false, true}, // cannot re-include inside an excluded dir
		{"sub/secret/keep.log", false, true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, stack.ignored(tc.path, tc.isDir), tc.path)
	}
}

func TestIgnoreStackPushDoesNotAlias(t *testing.T) {
	base := ignoreStack{}.push(parseGitignore("", []byte("*.a\n")))
	base = append(base[:1:1], base...)[:1] // give base spare capacity
	one := base.push(parseGitignore("x", []byte("*.b\n")))
	two := base.push(parseGitignore("y", []byte("*.c\n")))
	assert.True(t, one.ignored("x/f.b", false))
	assert.False(t, one.ignored("y/f.c", false))
	assert.True(t, two.ignored("y/f.c", false))
	assert.Len(t, base.push(nil), 1)
	assert.Len(t, base.push(parseGitignore("", []byte("# only a comment\n"))), 1)
}

// ignored reports whether p is ignored, either itself or because one of its
// parent directories is: what the walk gets by not entering ignored
// directories.
func (s ignoreStack) ignored(p string, isDir bool) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && s.match(p[:i], true) {
			return true
		}
	}
	return s.match(p, isDir)
}
