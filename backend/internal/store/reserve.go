package store

import (
	"errors"
	"os"
)

// ReserveBytes is the size of the reserve file ("<database>.reserve") Open keeps next to the
// database: space held back so that, when the disk fills during a run, the run can still be
// marked failed with its reason and summary. FinishRun deletes the file when a write fails because
// the disk is full and tries once more; the next Open makes it again.
const ReserveBytes = 2 << 20

func reservePath(abs string) string { return abs + ".reserve" }

// makeReserve ensures the reserve file exists with ReserveBytes of allocated space; it reports
// whether it does (false when the disk has no room for it).
func makeReserve(abs string) bool {
	p := reservePath(abs)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() >= ReserveBytes {
		return true
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false
	}
	err = allocate(f, ReserveBytes)
	if errors.Is(err, errors.ErrUnsupported) {
		// No fallocate here: writing the bytes allocates them just as well.
		_, err = f.WriteAt(make([]byte, ReserveBytes), 0)
		if err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(p)
		return false
	}
	return true
}

// releaseReserve deletes the reserve file, freeing its space; it reports whether there was one.
func (s *Store) releaseReserve() bool {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.reserve == "" {
		return false
	}
	err := os.Remove(s.reserve)
	s.reserve = ""
	return err == nil
}

// Reserved reports whether the store holds its reserve file (false when the disk had no room for
// it at Open, or once FinishRun has used it).
func (s *Store) Reserved() bool {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.reserve != ""
}
