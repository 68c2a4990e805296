//go:build !race

package testenv

// Race reports whether the test binary was built with -race.
const Race = false
