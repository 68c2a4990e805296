package humanpath

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPyLiteral(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/cache/web/web-1.md`:         `"/tmp/cache/web/web-1.md"`,
		`C:\Users\me\cache\web\web-1.md`:  `r"C:\Users\me\cache\web\web-1.md"`,
		`C:\Users\Zoë\x.md`:               `r"C:\Users\Zoë\x.md"`,
		`C:\dir\`:                         `"C:\\dir\\"`,
		`/tmp/say "hi"`:                   `"/tmp/say \"hi\""`,
		`C:\a"b`:                          `"C:\\a\"b"`,
		"/tmp/new\nline\ttab":             `"/tmp/new\nline\ttab"`,
		"C:\\bell\x07":                    `"C:\\bell\x07"`,
		"/tmp/\x7f\u0085\u2028\U000e0001": `"/tmp/\x7f\x85\u2028\U000e0001"`,
		"/tmp/caf\xe9":                    `"/tmp/caf\udce9"`,
		"":                                `""`,
	} {
		assert.Equal(t, want, PyLiteral(in), in)
	}
}
