package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f n bytes of allocated space (errors.ErrUnsupported where the filesystem cannot).
func allocate(f *os.File, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errors.ErrUnsupported
	}
	return err
}
