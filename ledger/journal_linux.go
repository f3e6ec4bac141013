package ledger

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// journalLocks: flock(2) serialises the ledger's writers.
const journalLocks = true

// tryLock takes an exclusive or shared flock on f without waiting; it
// reports false when another open file description holds a conflicting
// one. Taking a lock already held converts it.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		default:
			return false, err
		}
	}
}

// shareLock turns f's exclusive lock into a shared one.
func shareLock(f *os.File) error {
	ok, err := tryLock(f, false)
	if err == nil && !ok {
		err = errors.New("another process took the lock")
	}
	return err
}

// datasync makes f's written data durable (fdatasync: the file's size
// when it grew, not its times).
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
