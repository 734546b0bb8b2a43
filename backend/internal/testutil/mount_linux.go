package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs of size bytes on a new temporary folder and returns the folder; it is
// unmounted when the test ends (after the test's own cleanups registered later). The test is
// skipped when the process is not root or the mount is refused (a container without the
// privilege).
func MountTmpfs(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// ReadOnly makes path (a file or a folder) read-only for this process until the test ends. Root
// ignores permission bits, so for root it bind-mounts path read-only onto itself (the test is
// skipped when that is refused); for anyone else it removes the write permissions.
func ReadOnly(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, fi.Mode().Perm()&^0o222); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(path, fi.Mode().Perm()) })
		return
	}
	if err := unix.Mount(path, path, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount %s: %v", path, err)
	}
	if err := unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		unmount(t, path)
		t.Skipf("cannot make the bind mount of %s read-only: %v", path, err)
	}
	t.Cleanup(func() { unmount(t, path) })
}

// FillDisk writes a file named name in dir until its filesystem has no space left (ENOSPC) and
// returns the file's path.
func FillDisk(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", dir, err)
				}
				break
			}
		}
	}
	return p
}

func unmount(t testing.TB, dir string) {
	if err := unix.Unmount(dir, 0); err != nil {
		// Something still holds it (a file left open by a failed test): detach it anyway.
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	}
}
