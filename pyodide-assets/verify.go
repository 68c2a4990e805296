package pyodideassets

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Verify checks that b is the pinned stripped interpreter: first its length
// against [Size], then its sha256 against [SHA256]. A mismatch is reported as
// a *[VerifyError], which wraps [ErrCorrupt].
func Verify(b []byte) error {
	return verifyPin(b, "python.wasm", Size, SHA256)
}

// verifyPin checks b against a pinned size and hex sha256; what names the
// file in the error.
func verifyPin(b []byte, what string, size int, sum string) error {
	if len(b) != size {
		return &VerifyError{
			What: what + " size",
			Want: strconv.Itoa(size) + " bytes",
			Got:  strconv.Itoa(len(b)) + " bytes",
		}
	}
	got := sha256.Sum256(b)
	if gotHex := hex.EncodeToString(got[:]); gotHex != sum {
		return &VerifyError{What: what + " sha256", Want: sum, Got: gotHex}
	}
	return nil
}

// VerifyIntegrity checks tgz against an npm Subresource Integrity string such
// as [NPMIntegrity] ("sha512-<base64 digest>"). The string may list several
// space-separated hashes; the strongest algorithm present is used, as in the
// SRI specification, and any of its digests may match. sha256, sha384 and
// sha512 are supported. A malformed or unsupported string is an error; a
// digest mismatch is a *[VerifyError], which wraps [ErrCorrupt].
func VerifyIntegrity(tgz []byte, integrity string) error {
	type entry struct {
		alg    string
		digest []byte
	}
	strength := map[string]int{"sha256": 1, "sha384": 2, "sha512": 3}
	var best []entry
	bestStrength := 0
	for _, tok := range strings.Fields(integrity) {
		alg, b64, ok := strings.Cut(tok, "-")
		if !ok {
			return fmt.Errorf("pyodideassets: malformed integrity %q: want <algorithm>-<base64>", tok)
		}
		// SRI allows options after '?'; they carry no meaning here.
		b64, _, _ = strings.Cut(b64, "?")
		s, known := strength[alg]
		if !known {
			continue
		}
		digest, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return fmt.Errorf("pyodideassets: malformed integrity %q: %v", tok, err)
		}
		if len(digest) != newHash(alg).Size() {
			return fmt.Errorf("pyodideassets: malformed integrity %q: %s digest has %d bytes", tok, alg, len(digest))
		}
		switch {
		case s > bestStrength:
			best, bestStrength = []entry{{alg, digest}}, s
		case s == bestStrength:
			best = append(best, entry{alg, digest})
		}
	}
	if len(best) == 0 {
		return fmt.Errorf("pyodideassets: integrity %q has no sha256, sha384 or sha512 digest", integrity)
	}
	h := newHash(best[0].alg)
	h.Write(tgz)
	got := h.Sum(nil)
	for _, e := range best {
		if subtle.ConstantTimeCompare(e.digest, got) == 1 {
			return nil
		}
	}
	want := make([]string, len(best))
	for i, e := range best {
		want[i] = e.alg + "-" + base64.StdEncoding.EncodeToString(e.digest)
	}
	return &VerifyError{
		What: "npm tarball integrity",
		Want: strings.Join(want, " "),
		Got:  best[0].alg + "-" + base64.StdEncoding.EncodeToString(got),
	}
}

// newHash returns a new hash for an SRI algorithm name known to
// VerifyIntegrity.
func newHash(alg string) hash.Hash {
	switch alg {
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	default:
		return sha512.New()
	}
}
