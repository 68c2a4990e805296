package sessionstore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeyEnv names the environment variable whose key encrypts images at rest:
// 32 bytes, as 64 hex digits or standard base64.
const KeyEnv = "HERMES_SESSION_STORE_KEY"

// ErrTooLarge: an image would take its session past the store's cap.
var ErrTooLarge = errors.New("session store: the session's images would pass code_execution.session_store_max_mb")

// ErrSealed: an image cannot be opened with the key this process has (or
// has not).
var ErrSealed = errors.New("session store: image encryption")

// sealMagic begins an encrypted image.
var sealMagic = []byte("hermes-sealed-1\n")

// sealAD binds a sealed image to its use: an image cannot be passed off as
// any other sealed thing. It does not bind the session: a fork copies
// images between sessions as they are (SECURITY.md says so).
var sealAD = []byte("hermes session kernel image")

// ParseKey reads a key in KeyEnv's form.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if k, err := hex.DecodeString(s); err == nil && len(k) == 32 {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, fmt.Errorf("%s: want 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -hex 32`)", KeyEnv)
}

// Guarded is a store whose images are encrypted with AES-256-GCM when it
// has a key, and whose sessions' images together stay within a cap.
// Snapshots (PutBase) are not encrypted: they hold the interpreter as it
// starts, no session's data.
type Guarded struct {
	Store
	aead     cipher.AEAD // nil: images are stored as they are
	maxBytes int64       // 0: no cap
}

// Guard wraps s: key (nil for none) encrypts images, maxBytes (0 for none)
// caps each session's images together.
func Guard(s Store, key []byte, maxBytes int64) (*Guarded, error) {
	g := &Guarded{Store: s, maxBytes: maxBytes}
	if key != nil {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyEnv, err)
		}
		if g.aead, err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Encrypted reports whether images are encrypted.
func (g *Guarded) Encrypted() bool { return g.aead != nil }

// Put implements Store, checking the cap and encrypting.
func (g *Guarded) Put(session, kernel string, data []byte) error {
	if g.maxBytes > 0 {
		others, err := g.Store.SessionBytes(session, kernel)
		if err != nil {
			return err
		}
		if n := others + int64(len(data)); n > g.maxBytes {
			return fmt.Errorf("%w (%.1f MiB > %d MiB)", ErrTooLarge, float64(n)/(1<<20), g.maxBytes>>20)
		}
	}
	if g.aead != nil {
		nonce := make([]byte, g.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		sealed := append(append([]byte{}, sealMagic...), nonce...)
		data = g.aead.Seal(sealed, nonce, data, sealAD)
	}
	return g.Store.Put(session, kernel, data)
}

// Take implements Store, decrypting. An image that does not open here
// (another key, or none) is put back: an executor with the right key
// resumes it.
func (g *Guarded) Take(session, kernel string) ([]byte, error) {
	data, err := g.Store.Take(session, kernel)
	if err != nil {
		return nil, err
	}
	plain, err := g.open(data)
	if errors.Is(err, ErrSealed) {
		if perr := g.Store.Put(session, kernel, data); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return plain, err
}

// open decrypts data, when it is sealed and g has the key.
func (g *Guarded) open(data []byte) ([]byte, error) {
	sealed := bytes.HasPrefix(data, sealMagic)
	switch {
	case sealed && g.aead == nil:
		return nil, fmt.Errorf("%w: the image is encrypted and %s is not set", ErrSealed, KeyEnv)
	case !sealed && g.aead != nil:
		return nil, fmt.Errorf("%w: the image is not encrypted but %s is set (refused: an image written by another may not be)", ErrSealed, KeyEnv)
	case !sealed:
		return data, nil
	}
	rest := data[len(sealMagic):]
	if len(rest) < g.aead.NonceSize() {
		return nil, fmt.Errorf("%w: the image is truncated", ErrSealed)
	}
	plain, err := g.aead.Open(nil, rest[:g.aead.NonceSize()], rest[g.aead.NonceSize():], sealAD)
	if err != nil {
		return nil, fmt.Errorf("%w: the image does not open with %s's key (another key, or damaged)", ErrSealed, KeyEnv)
	}
	return plain, nil
}
