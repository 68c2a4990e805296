package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/engine"
	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/internal/strict"
)

// Durable session kernels (docs/service.md): with
// code_execution.session_store set, a strict-mode session kernel that the
// kernel limit evicts, the idle timeout ends or Close finds idle is
// suspended into the store (runtime/internal/strict/suspend.go) instead of
// closed, and the next call for its key resumes it, with its variables,
// imports and private files. A kernel that cannot be suspended (an open
// file, a project-mode kernel) is closed as before, and its next call's
// note says its state is lost.

// Notes of a resumed, or not resumed, kernel.
const (
	// noteNotResumed has the reason.
	noteNotResumed = "The session's suspended kernel could not be resumed (%s), so its state (variables, imports, loaded data) is lost; this call started a fresh kernel."
)

// storeName is the store's name of a kernel within its session.
func (k kernelKey) storeName() string {
	return strings.Join([]string{k.mode, k.interpreter, k.workdir, k.tools, k.backend}, "\x00")
}

// suspendable reports whether kernels of key can be suspended: strict
// mode's, in the embedded interpreter.
func (k kernelKey) suspendable() bool {
	return k.mode == config.ModeStrict && k.interpreter == "wasm"
}

// endKernel ends en, a kernel taken out of the table for why ("lru",
// "idle", "shutdown"): suspended into the store when there is one and en
// can be, else closed. It reports whether en was suspended.
func (e *Executor) endKernel(en *kernelEntry, why string) bool {
	defer e.sessions.suspendDone(en.key)
	if e.store == nil || !en.key.suspendable() {
		en.k.Close()
		return false
	}
	start := time.Now()
	image, base, err := e.strict.SuspendKernel(context.Background(), en.k)
	if err == nil {
		err = e.storeBase(base)
	}
	if err == nil {
		err = e.store.Put(en.key.session, en.key.storeName(), envelope(en.count, image))
	}
	if err != nil {
		level := slog.LevelWarn
		if errors.Is(err, strict.ErrNotSuspendable) {
			level = slog.LevelInfo
		}
		e.log.Log(context.Background(), level, "kernel not suspended", "session", en.key.session, "reason", why, "error", err.Error())
		en.k.Close()
		return false
	}
	e.sessions.suspended.Add(1)
	e.log.Log(context.Background(), slog.LevelInfo, "kernel suspended", "session", en.key.session, "reason", why,
		"bytes", len(image), "duration", time.Since(start))
	return true
}

// resumeKernel resumes the kernel of key from the store, when it holds
// one: the kernel, the calls it had run, and how long the resume took. With
// no image it returns a nil kernel and no note; with one that cannot
// resume (damaged, made by another build), a nil kernel and the note that
// says the state is lost.
func (e *Executor) resumeKernel(ctx context.Context, c *call, key kernelKey) (k engine.Kernel, prior int, took time.Duration, note string) {
	if e.store == nil || !key.suspendable() {
		return nil, 0, 0, ""
	}
	if ch := e.sessions.suspendingFor(key); ch != nil {
		// Being suspended by another session's eviction, or the reaper.
		e.sessions.suspendWaits.Add(1)
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, 0, 0, ""
		}
	}
	start := time.Now()
	data, err := e.store.Take(key.session, key.storeName())
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil, 0, 0, ""
	}
	if err == nil {
		var image []byte
		if prior, image, err = unenvelope(data); err == nil {
			if err = e.strict.Warm(ctx, e.cfg.CodeExecution.MemoryLimitMB); err == nil {
				k, err = e.strict.ResumeKernel(ctx, e.kernelSpec(c), image, e.store.Base)
			}
		}
	}
	if err != nil {
		e.sessions.resumeFailures.Add(1)
		e.log.Log(context.Background(), slog.LevelWarn, "kernel not resumed", "session", key.session, "error", err.Error())
		return nil, 0, 0, fmt.Sprintf(noteNotResumed, err)
	}
	e.sessions.resumed.Add(1)
	took = time.Since(start)
	e.log.Log(context.Background(), slog.LevelInfo, "kernel resumed", "session", key.session, "duration", took)
	return k, prior, took, ""
}

// storeBase puts the snapshot whose sum is sum in the store, once per
// process: a process that resumes the image later may have made another.
func (e *Executor) storeBase(sum string) error {
	e.storedBases.Lock()
	defer e.storedBases.Unlock()
	if e.storedBases.sums[sum] {
		return nil
	}
	data, err := e.strict.EncodedSnapshot(sum)
	if err == nil {
		err = e.store.PutBase(sum, data)
	}
	if err != nil {
		return err
	}
	if e.storedBases.sums == nil {
		e.storedBases.sums = map[string]bool{}
	}
	e.storedBases.sums[sum] = true
	return nil
}

// suspendingFor is the channel of key's kernel being suspended, or nil.
func (t *sessionTable) suspendingFor(key kernelKey) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.suspending[key]
}

// suspendDone ends key's suspension: its image is stored, or it was
// closed.
func (t *sessionTable) suspendDone(key kernelKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.suspendDoneLocked(key)
}

// suspendDoneLocked is suspendDone with t.mu held.
func (t *sessionTable) suspendDoneLocked(key kernelKey) {
	if ch := t.suspending[key]; ch != nil {
		close(ch)
		delete(t.suspending, key)
	}
}

// forgetImages removes the suspended kernels of sessions from the store.
func (e *Executor) forgetImages(sessions ...string) {
	if e.store == nil {
		return
	}
	for _, s := range sessions {
		if err := e.store.Delete(s); err != nil {
			e.log.Log(context.Background(), slog.LevelWarn, "session store", "session", s, "error", err.Error())
		}
	}
}

// envelope is what the store holds for a kernel: the calls it had run, a
// newline, and its image.
func envelope(count int, image []byte) []byte {
	return append(strconv.AppendInt(nil, int64(count), 10), append([]byte{'\n'}, image...)...)
}

func unenvelope(data []byte) (count int, image []byte, err error) {
	head, image, ok := bytes.Cut(data, []byte{'\n'})
	if ok {
		count, err = strconv.Atoi(string(head))
	}
	if !ok || err != nil || count < 0 {
		return 0, nil, strict.ErrImageDamaged
	}
	return count, image, nil
}

// nonEmpty is [s], or nothing when s is "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
