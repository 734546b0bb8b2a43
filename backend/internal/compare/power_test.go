package compare

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// fineIndex is the slot of value us (µs) in a counts array of metrics' geometry (the inverse of
// fineValue).
func fineIndex(us int64) int {
	if us < 2048 {
		return int(max(us, 0))
	}
	b := bits.Len64(uint64(us)) - 11
	return (b+1)<<10 + int(us>>b) - 1024
}

func TestFineIndexInvertsFineValue(t *testing.T) {
	for _, us := range []int64{0, 1, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 5000, 123456, 3_599_999_999} {
		i := fineIndex(us)
		lo, w := fineValue(i)
		if us < lo || us >= lo+w {
			t.Errorf("%d µs → slot %d = [%d, %d)", us, i, lo, lo+w)
		}
	}
}

// noise describes how much a synthetic run wanders.
type noise struct {
	name     string
	tpsCV    float64 // standard deviation of a second's throughput, relative
	latDrift float64 // standard deviation of a second's latency level (log scale)
	latSigma float64 // per-request lognormal σ
}

var (
	lowNoise  = noise{"low", 0.02, 0.02, 0.3}
	highNoise = noise{"high", 0.05, 0.05, 0.5}
)

// arPhi is the lag-1 autocorrelation of the synthetic per-second series: neighbouring seconds
// are alike, as on a real target (caches, GC, connection reuse).
const arPhi = 0.5

// runEffect is the standard deviation of a synthetic run's level from run to run, as a fraction
// of the per-second standard deviation: measured on a busy 2-core machine, two runs of one plan
// against a loopback target differ by 0.27 (p50) to 0.57 (TPS) per-second standard deviations
// (docs/compare.md, "Run-to-run noise").
const runEffect = 0.5

// syntheticRun is a run of n stored seconds whose throughput is 1000·(1−effect) req/s and whose
// latency is 5 ms·(1+effect), both shifted by a run effect (runEffect) and wandering as AR(1)
// series with noise nz; recorded requests are sampled into each second's histogram. It is built
// through the same path as AddSecond, minus the HdrHistogram encoding.
func syntheticRun(id int64, n int, effect float64, nz noise, latency bool, rng *rand.Rand) *Run {
	const recorded = 100
	r := NewRun(Meta{ID: id, Summary: &metrics.Summary{DurationS: float64(n)}})
	innov := math.Sqrt(1 - arPhi*arPhi)
	runTPS := math.Exp(runEffect * nz.tpsCV * rng.NormFloat64())
	runLat := math.Exp(runEffect * nz.latDrift * rng.NormFloat64())
	x := nz.tpsCV * rng.NormFloat64()
	y := nz.latDrift * rng.NormFloat64()
	idx := make([]int, recorded)
	for sec := 1; sec <= n; sec++ {
		x = arPhi*x + innov*nz.tpsCV*rng.NormFloat64()
		y = arPhi*y + innov*nz.latDrift*rng.NormFloat64()
		rps := 1000 * (1 - effect) * (1 + x) * runTPS
		level := 5000 * (1 + effect) * math.Exp(y) * runLat
		var fine []fineCount
		for k := range idx {
			if !latency {
				break
			}
			idx[k] = fineIndex(int64(level * math.Exp(nz.latSigma*rng.NormFloat64())))
		}
		if latency {
			slices.Sort(idx)
		}
		for _, i := range idx[:len(idx)*b2i(latency)] {
			if len(fine) > 0 && fine[len(fine)-1].i == i {
				fine[len(fine)-1].c++
			} else {
				fine = append(fine, fineCount{i, 1})
			}
		}
		req := int64(math.Round(rps))
		lambda := float64(req) * 0.005 // 0.5 % errors, Poisson (normal approximation)
		errs := max(0, int64(math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64())))
		r.addSecond(metrics.Sample{ElapsedS: sec, RPS: rps, Requests: req, Errors: errs}, fine)
	}
	return r
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// powerCell is the share of comparisons that called a metric a regression.
type powerCell struct {
	effect  float64
	seconds int
	nz      noise
	rate    map[string]float64 // metric → share of regression verdicts
	any     float64            // share with a regression on any metric
}

var powerMetrics = []string{"tps", "p50", "p90", "p95", "p99", "error_rate"}

// runPowerCell compares reps pairs of synthetic runs. Throughput and error rate are judged on
// runs without histograms (no bootstrap: cheap, so 4·reps pairs), the latency percentiles on
// reps pairs with histograms.
// powerReps is how many pairs of runs with histograms each cell compares (and 4× as many without).
const powerReps = 40

// powerResamples is the bootstrap resamples per comparison in the power suite.
const powerResamples = 300

func runPowerCell(t testing.TB, effect float64, seconds int, nz noise, reps int) powerCell {
	cell := powerCell{effect: effect, seconds: seconds, nz: nz, rate: map[string]float64{}}
	seed := uint64(effect*1000)<<32 | uint64(seconds)<<8 | uint64(len(nz.name))
	rng := rand.New(rand.NewPCG(seed, 7))
	anyLat := make([]bool, reps)
	for pass, n := range []int{reps, 4 * reps} {
		latency := pass == 0
		for rep := range n {
			a := syntheticRun(1, seconds, 0, nz, latency, rng)
			b := syntheticRun(2, seconds, effect, nz, latency, rng)
			res, err := Compare([]*Run{a, b}, 0, Options{Resamples: powerResamples, Seed: uint64(rep) + 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Metrics {
				if isLatency := m.Test == testBoot; isLatency != latency {
					continue
				}
				if m.Values[1].Verdict == Regression {
					cell.rate[m.Metric] += 1 / float64(n)
					if latency {
						anyLat[rep] = true
					} else if rep < reps && !anyLat[rep] {
						anyLat[rep] = true
						cell.any++
					}
				}
			}
			if latency && anyLat[rep] {
				cell.any++
			}
		}
	}
	cell.any /= float64(reps)
	return cell
}

// TestStatisticalPower compares synthetic runs of known effect — throughput lower and latency
// higher by 0, 2, 10, 20 and 50 % — of 10, 30 and 120 s, with low and high autocorrelated noise
// and a run effect (runEffect), and checks the method's promises: on equal runs no metric is
// called a regression in more than 5 % of the comparisons; a 20 % change between runs of 30 s or
// more is found in at least 95 % of them on TPS and p50 (and p95 in low noise). With
// VOLLEY_POWER_TABLE=1 it prints the table of docs/compare.md.
func TestStatisticalPower(t *testing.T) {
	effects := []float64{0, 0.02, 0.10, 0.20, 0.50}
	lengths := []int{10, 30, 120}
	var cells []powerCell
	for _, nz := range []noise{lowNoise, highNoise} {
		for _, n := range lengths {
			for _, e := range effects {
				if !powerAll && (n != 30 || (e != 0 && e != 0.20)) {
					continue
				}
				c := runPowerCell(t, e, n, nz, powerReps)
				cells = append(cells, c)
				switch {
				case e == 0:
					for _, m := range powerMetrics {
						if c.rate[m] > 0.05 {
							t.Errorf("equal %d s runs, %s noise: %s called a regression in %.0f %% of the comparisons (at most 5 %%)",
								n, nz.name, m, c.rate[m]*100)
						}
					}
				case e == 0.20 && n >= 30:
					// the tail's run-to-run noise is too wide for 30 s runs in high noise: p95
					// is held to it in low noise only (docs/compare.md)
					detect := []string{"tps", "p50", "p95"}
					if nz == highNoise {
						detect = detect[:2]
					}
					for _, m := range detect {
						if c.rate[m] < 0.95 {
							t.Errorf("20 %% effect, %d s, %s noise: %s detected in %.0f %% of %d comparisons (at least 95 %%)",
								n, nz.name, m, c.rate[m]*100, powerReps)
						}
					}
				}
			}
		}
	}
	if os.Getenv("VOLLEY_POWER_TABLE") != "" && powerAll {
		var b strings.Builder
		fmt.Fprintf(&b, "\n| noise | length | metric |")
		for _, e := range effects {
			fmt.Fprintf(&b, " %g %% |", e*100)
		}
		b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(effects)) + "\n")
		for _, nz := range []noise{lowNoise, highNoise} {
			for _, n := range lengths {
				for _, m := range append(slices.Clone(powerMetrics), "any") {
					fmt.Fprintf(&b, "| %s | %d s | %s |", nz.name, n, m)
					for _, c := range cells {
						if c.nz == nz && c.seconds == n {
							v := c.rate[m]
							if m == "any" {
								v = c.any
							}
							fmt.Fprintf(&b, " %.0f %% |", v*100)
						}
					}
					b.WriteString("\n")
				}
			}
		}
		fmt.Fprintf(&b, "\n%d comparisons per cell\n", powerReps)
		t.Log(b.String())
	}
}
