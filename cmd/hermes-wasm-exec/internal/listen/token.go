package listen

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// TokenEnv holds the token clients of serve (over TCP) and mcp --http
// authenticate with.
const TokenEnv = "HERMES_SERVE_TOKEN"

// maxTokenFile bounds what is read of a token file: a token is one short
// line.
const maxTokenFile = 4 << 10

// Token is the token a listener's clients must present, and where it came
// from.
type Token struct {
	// Value is the token.
	Value string
	// File is the file that holds it; "" when it came from $HERMES_SERVE_TOKEN.
	File string
	// Generated is true when this process generated the token and wrote
	// File: Close removes it.
	Generated bool
	// dir is the private dir made for File when no --token-file was
	// given; Close removes it.
	dir string
}

// ResolveToken returns the token a TCP listener's clients must present;
// a TCP listener never serves without one. In order:
//
//  1. $HERMES_SERVE_TOKEN, when it is set;
//  2. with file (--token-file), the token in file when it exists, or else
//     a new one written there for its owner only (0600);
//  3. else a new one written to "token" in a new dir of the temp dir
//     that only this user may enter (0700).
//
// An existing file is read only when it is a regular file (a symlink is
// refused, never followed), owned by this user, with no permission for
// group or others, and no other hard link (on Windows, which has no
// modes: a regular file, not a symlink): a token others could read is
// not a secret, and one they could write is theirs. Close removes what
// was generated.
func ResolveToken(file string) (*Token, error) {
	if t := os.Getenv(TokenEnv); t != "" {
		return &Token{Value: t}, nil
	}
	if file != "" {
		b, err := readTokenFile(file)
		if err == nil {
			t, err := parseToken(file, b)
			if err != nil {
				return nil, err
			}
			return &Token{Value: t, File: file}, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--token-file %s: %w", file, err)
		}
		t, err := generateInto(file)
		if err != nil {
			return nil, fmt.Errorf("--token-file %s: %w", file, err)
		}
		return t, nil
	}
	dir, err := os.MkdirTemp("", "hermes-wasm-exec-")
	if err != nil {
		return nil, fmt.Errorf("cannot make a private dir for a generated token: %w (give --token-file FILE, or set %s)", err, TokenEnv)
	}
	t, err := generateInto(filepath.Join(dir, "token"))
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	t.dir = dir
	return t, nil
}

// generateInto generates a token and writes it to path, which must not
// exist.
func generateInto(path string) (*Token, error) {
	t, err := NewToken()
	if err != nil {
		return nil, fmt.Errorf("cannot generate a token: %w", err)
	}
	if err := WriteTokenFile(path, t); err != nil {
		return nil, err
	}
	return &Token{Value: t, File: path, Generated: true}, nil
}

// parseToken is the token in a file's bytes: one line of printable
// characters, spaces around it ignored.
func parseToken(file string, b []byte) (string, error) {
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("--token-file %s is larger than %d KiB: it does not hold a token (remove it to have one generated)", file, maxTokenFile>>10)
	}
	t := string(bytes.TrimSpace(b))
	if t == "" {
		return "", fmt.Errorf("--token-file %s is empty: put the token in it, or remove it to have one generated", file)
	}
	if strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("--token-file %s must hold one token on one line, without spaces or control characters", file)
	}
	return t, nil
}

// Close removes the token file and dir this process generated; nothing
// otherwise. It is nil-safe and idempotent.
func (t *Token) Close() {
	if t == nil || !t.Generated {
		return
	}
	os.Remove(t.File)
	if t.dir != "" {
		os.Remove(t.dir)
	}
	t.Generated = false
}

// Where says where the token is, for the line a server prints when it
// starts: never the token itself.
func (t *Token) Where() string {
	switch {
	case t.File == "":
		return "the token from $" + TokenEnv
	case t.Generated:
		return "a token generated into " + absPath(t.File) + " (owner-only; removed when the server exits)"
	default:
		return "the token in " + absPath(t.File)
	}
}

// NewToken returns a new random token (32 bytes, hex).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// WriteTokenFile writes token to path, which must not exist (a file, or
// a symlink, created there meanwhile is an error, never overwritten nor
// followed), readable and writable by its owner only (on Windows, a DACL
// for the user alone).
func WriteTokenFile(path, token string) error {
	f, err := createPrivate(path)
	if err != nil {
		return fmt.Errorf("cannot write the token file: %w", err)
	}
	_, err = io.WriteString(f, token+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("cannot write the token file: %w", err)
	}
	return nil
}

// absPath is p made absolute, for messages.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
