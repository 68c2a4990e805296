package pyodideassets

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Verify checks that b is the pinned stripped interpreter: first its length
// against [Size], then its sha256 against [SHA256]. A mismatch is reported as
// a *[VerifyError], which wraps [ErrCorrupt].
func Verify(b []byte) error {
	return verifyPin(b, "python.wasm", Size, SHA256)
}

// VerifyStdlib checks that b is the pinned standard library zip.
func VerifyStdlib(b []byte) error {
	return verifyPin(b, StdlibName, StdlibSize, StdlibSHA256)
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
