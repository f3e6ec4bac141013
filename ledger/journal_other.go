//go:build !linux

package ledger

import "os"

// journalLocks: file locks (and so the charge journal) are implemented on
// Linux only. Elsewhere nothing is locked: a writer without the journal
// proceeds as before the journal existed (recovering a journal left by
// another system's process all the same), and the journal is refused.
const journalLocks = false

func tryLock(f *os.File, exclusive bool) (bool, error) { return true, nil }

func shareLock(f *os.File) error { return nil }

func datasync(f *os.File) error { return f.Sync() }
