//go:build !linux

package store

import (
	"errors"
	"os"
)

func allocate(*os.File, int64) error { return errors.ErrUnsupported }
