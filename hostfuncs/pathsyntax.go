package hostfuncs

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// pathSyntax is the path syntax of a backend's file system: package path
// (POSIX) for a remote backend, package path/filepath (this host's) for the
// local one. The zero value is the host's. On a POSIX host both agree; the
// tools build every path of the backend through one of these, so that a
// Windows host still speaks POSIX to a remote target.
type pathSyntax struct{ posix bool }

func (s pathSyntax) isAbs(p string) bool {
	if s.posix {
		return path.IsAbs(p)
	}
	return filepath.IsAbs(p)
}

func (s pathSyntax) clean(p string) string {
	if s.posix {
		return path.Clean(p)
	}
	return filepath.Clean(p)
}

func (s pathSyntax) join(elem ...string) string {
	if s.posix {
		return path.Join(elem...)
	}
	return filepath.Join(elem...)
}

func (s pathSyntax) dir(p string) string {
	if s.posix {
		return path.Dir(p)
	}
	return filepath.Dir(p)
}

func (s pathSyntax) base(p string) string {
	if s.posix {
		return path.Base(p)
	}
	return filepath.Base(p)
}

// windows reports whether the syntax is this host's and the host is
// Windows (see realPathIn).
func (s pathSyntax) windows() bool { return !s.posix && filepath.Separator == '\\' }

// sep is the separator, as a string.
func (s pathSyntax) sep() string {
	if s.posix {
		return "/"
	}
	return string(filepath.Separator)
}

// volumeName is filepath.VolumeName on the host, "" for POSIX.
func (s pathSyntax) volumeName(p string) string {
	if s.posix {
		return ""
	}
	return filepath.VolumeName(p)
}

// fromSlash turns a slash-separated path into this syntax.
func (s pathSyntax) fromSlash(p string) string {
	if s.posix {
		return p
	}
	return filepath.FromSlash(p)
}

// toSlash turns a path of this syntax into a slash-separated one.
func (s pathSyntax) toSlash(p string) string {
	if s.posix {
		return p
	}
	return filepath.ToSlash(p)
}

// isLocal is filepath.IsLocal for this syntax: p is relative, not empty,
// and stays below its base lexically.
func (s pathSyntax) isLocal(p string) bool {
	if !s.posix {
		return filepath.IsLocal(p)
	}
	if p == "" || path.IsAbs(p) {
		return false
	}
	c := path.Clean(p)
	return c != ".." && !strings.HasPrefix(c, "../")
}

// split splits p at separators, dropping empty parts.
func (s pathSyntax) split(p string) []string {
	if s.posix {
		return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	}
	return strings.FieldsFunc(p, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
}

// rel is filepath.Rel for this syntax.
func (s pathSyntax) rel(base, targ string) (string, error) {
	if !s.posix {
		return filepath.Rel(base, targ)
	}
	base, targ = path.Clean(base), path.Clean(targ)
	if base == targ {
		return ".", nil
	}
	if path.IsAbs(base) != path.IsAbs(targ) {
		return "", errors.New("Rel: can't make " + targ + " relative to " + base)
	}
	parts := func(p string) []string {
		var out []string
		for _, e := range strings.Split(p, "/") {
			if e != "" && e != "." {
				out = append(out, e)
			}
		}
		return out
	}
	bs, ts := parts(base), parts(targ)
	i := 0
	for i < len(bs) && i < len(ts) && bs[i] == ts[i] {
		i++
	}
	up := make([]string, 0, len(bs)-i+len(ts)-i)
	for _, b := range bs[i:] {
		if b == ".." {
			return "", errors.New("Rel: can't make " + targ + " relative to " + base)
		}
		up = append(up, "..")
	}
	return path.Join(append(up, ts[i:]...)...), nil
}

// key is p as compared: lower-cased where the host's file names fold case
// (never for a POSIX target).
func (s pathSyntax) key(p string) string {
	if !s.posix && foldCase {
		return strings.ToLower(p)
	}
	return p
}

// within reports whether p is base or lies below it. Both are absolute and
// clean.
func (s pathSyntax) within(p, base string) bool {
	p, base = s.key(p), s.key(base)
	if p == base {
		return true
	}
	if !strings.HasSuffix(base, s.sep()) {
		base += s.sep()
	}
	return strings.HasPrefix(p, base)
}

// outside reports whether rel, a result of rel(), leaves its base.
func (s pathSyntax) outside(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+s.sep())
}

// The Tools' path helpers: the backend's syntax.

func (t *Tools) isAbs(p string) bool        { return t.px.isAbs(p) }
func (t *Tools) clean(p string) string      { return t.px.clean(p) }
func (t *Tools) join(elem ...string) string { return t.px.join(elem...) }
func (t *Tools) dir(p string) string        { return t.px.dir(p) }
func (t *Tools) base(p string) string       { return t.px.base(p) }

// remote reports whether the tools act on a remote backend.
func (t *Tools) remote() bool { return t.px.posix }

// expandHome replaces a leading "~" with the user's home: this host's
// (expandHome) for the local backend, the target's (remoteHome) for a
// remote one. p is returned unchanged when the home is not known.
func (t *Tools) expandHome(p string) string {
	if !t.remote() {
		return expandHome(p)
	}
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home := t.remoteHome()
	if home == "" {
		return p
	}
	return path.Join(home, p[1:])
}

// remoteHome is the remote target's $HOME, as the backend learnt it when it
// connected; "" when unknown or not absolute.
func (t *Tools) remoteHome() string {
	if home := t.backend.Home(); path.IsAbs(home) {
		return path.Clean(home)
	}
	return ""
}
