// Package procstat samples the load generator's own process: CPU %, resident memory, goroutines
// and GC pause time. It reads the OS through gopsutil; the engine calls it once per second.
package procstat

import (
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// Stats is one reading.
type Stats struct {
	CPUPercent float64 // since the previous reading, of one core (200 = two cores busy)
	RSSBytes   uint64
	Goroutines int
	GCPause    time.Duration // stop-the-world GC pause since the previous reading
}

// Sampler reads this process's stats. Not safe for concurrent use.
type Sampler struct {
	proc      *process.Process
	lastPause time.Duration
	gc        debug.GCStats
}

// New makes a sampler and primes the CPU counter (gopsutil's first CPU-percent call returns 0).
func New() *Sampler {
	s := &Sampler{}
	if p, err := process.NewProcess(int32(os.Getpid())); err == nil {
		s.proc = p
		_, _ = p.Percent(0)
	}
	debug.ReadGCStats(&s.gc)
	s.lastPause = s.gc.PauseTotal
	return s
}

// Read returns the stats since the previous Read (or since New). Fields that the OS cannot give
// are left zero rather than failing the run.
func (s *Sampler) Read() Stats {
	st := Stats{Goroutines: runtime.NumGoroutine()}
	if s.proc != nil {
		if c, err := s.proc.Percent(0); err == nil {
			st.CPUPercent = c
		}
		if m, err := s.proc.MemoryInfo(); err == nil {
			st.RSSBytes = m.RSS
		}
	}
	debug.ReadGCStats(&s.gc)
	st.GCPause = s.gc.PauseTotal - s.lastPause
	s.lastPause = s.gc.PauseTotal
	return st
}
