//go:build !race

package compare

// powerAll: the power suite runs every cell of its table.
const powerAll = true
