//go:build race

package compare

// powerAll: under the race detector, which makes each comparison several times slower, the power
// suite runs only the cells its bounds are about (equal runs and the 20 % effect on 30 s runs),
// with the same seeds and so the same outcome as the full table.
const powerAll = false
