package sessionstore

import (
	"errors"
	"fmt"
	"time"
)

// Store is where suspended kernels' images live: a dir (Dir), an
// S3-compatible object store (S3), or the process's memory (Memory). Every
// method is safe for concurrent use, and a Put is atomic: a reader sees a
// whole image or the previous one, never part of one. Kernel names are the
// executor's, of any bytes; a store maps them to names of its own.
type Store interface {
	// Put stores data as the image of session's kernel named kernel, over
	// any earlier one.
	Put(session, kernel string, data []byte) error
	// Take returns the image of session's kernel named kernel and removes
	// it: a kernel resumes from its image once. ErrNotFound when there is
	// none.
	Take(session, kernel string) ([]byte, error)
	// Delete removes every image of session. Its lease stays: an executor
	// that holds it may be running the session (a close elsewhere must not
	// let a third take it over meanwhile); it ends with Release, or lapses.
	Delete(session string) error
	// Copy copies every image of session from to session to, over to's, and
	// returns how many it copied.
	Copy(from, to string) (int, error)
	// PutBase stores the interpreter snapshot whose sum is sum, unless the
	// store has it; Base returns it (ErrNotFound when absent).
	PutBase(sum string, data []byte) error
	Base(sum string) ([]byte, error)
	// SessionBytes is the size of session's images other than kernel's.
	SessionBytes(session, kernel string) (int64, error)
	// Acquire gives session's lease to owner until until when nobody holds
	// it, its holder's lease has expired, owner holds it already, or its
	// holder is replace (one known to be gone; "" for none). Otherwise it
	// returns the holder's lease and an error wrapping ErrLeased. It is
	// atomic across processes (and replicas) sharing the store.
	Acquire(session, owner string, until time.Time, replace string) (Lease, error)
	// Release ends owner's lease of session; a lease of another owner is
	// left alone.
	Release(session, owner string) error
	// AskHandoff asks holder, the owner of session's lease, to hand the
	// session over: to suspend its kernel (once no call runs in it) and
	// release the lease. Asking again is asking once.
	AskHandoff(holder, session string) error
	// Asked returns the sessions asked of owner since its last call, and
	// forgets them.
	Asked(owner string) ([]string, error)
	// Sweep removes the images not written since before, and the leases
	// that expired before it (and handoff requests older than it), and
	// reports how many images it removed.
	Sweep(before time.Time) (int, error)
	// Usage counts the images in the store and their bytes.
	Usage() (images int, bytes int64, err error)
}

// Lease is a session's one writer: the owner (an executor's name, see
// executor docs) and when the lease ends unless renewed.
type Lease struct {
	Owner string
	Until time.Time
}

// ErrNotFound: the store holds no image for that kernel.
var ErrNotFound = errors.New("no suspended kernel")

// ErrLeased: another owner holds the session's lease.
var ErrLeased = errors.New("the session is held by another executor")

// leasedError is ErrLeased with the holder.
func leasedError(session string, l Lease) error {
	return fmt.Errorf("%w: session %q is held by %s until %s", ErrLeased, session, l.Owner, l.Until.UTC().Format(time.RFC3339))
}
