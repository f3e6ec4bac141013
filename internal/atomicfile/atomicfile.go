// Package atomicfile replaces regular files atomically: the new content is
// written to a temporary file in the target's directory, synced, and renamed
// over the target, so readers see the old file or the complete new one and a
// crash never leaves a half-written file behind.
//
// Renaming replaces whatever the name points at, so Write refuses targets
// that are not regular files: a symbolic link (the link itself would be
// replaced by a regular file, not the file it points to), a device such as
// /dev/full or /dev/null, a directory, a named pipe or a socket. Write to
// such targets directly instead of through this package.
//
// The check and the rename are not one atomic step: a target swapped for a
// symbolic link in between is replaced, not followed. Rename never writes
// through a link, so the worst case is the link's replacement.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultMode is the permission of a newly created file.
const DefaultMode fs.FileMode = 0o644

// ErrNotRegular is returned (wrapped) when the target exists and is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// Check reports whether Write would accept path: nil when it does not exist
// or is a regular file, an error wrapping ErrNotRegular otherwise. Commands
// call it before expensive work so a bad target fails at once.
func Check(path string) error {
	st, err := os.Lstat(path)
	switch {
	case err == nil:
		if !st.Mode().IsRegular() {
			return fmt.Errorf("refusing to replace %s: %w (%s)", path, ErrNotRegular, describe(st.Mode()))
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return err
}

// Write replaces path with what fn writes, atomically. An existing target
// keeps its permission bits; a new file gets DefaultMode. See WriteMode.
func Write(path string, fn func(io.Writer) error) error {
	return WriteMode(path, DefaultMode, fn)
}

// WriteMode is Write with the permission of a newly created file (an
// existing target keeps its own). The writer passed to fn is buffered; fn's
// error, a write, sync, close or rename error all leave the target untouched
// and remove the temporary file, as does a panic in fn (which propagates).
// After the rename the directory is synced so the new name is durable.
func WriteMode(path string, mode fs.FileMode, fn func(io.Writer) error) (err error) {
	if err := Check(path); err != nil {
		return err
	}
	perm := mode.Perm()
	if st, err := os.Lstat(path); err == nil {
		perm = st.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done { // an error or a panic: leave no temporary file behind
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 256<<10)
	if err := fn(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return syncDir(dir)
}

// syncDir makes a rename in dir durable. File systems that cannot sync a
// directory (EINVAL, ENOTSUP) are not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link; give the path of the file it points to"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0, m&fs.ModeDevice != 0:
		return "a device; write to it directly, e.g. through standard output"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
