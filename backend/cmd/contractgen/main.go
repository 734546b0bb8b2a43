// Command contractgen writes the frontend's generated plan contract (package contract):
//
//	go run ./backend/cmd/contractgen -o frontend/src/lib/contract.gen.ts
//
// `make contract` and `go generate ./backend/internal/contract` run it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/volley-load/volley/backend/internal/contract"
)

func main() {
	out := flag.String("o", contract.Path, "the file to write")
	flag.Parse()
	b, err := contract.Generate()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "contractgen:", err)
		os.Exit(1)
	}
}
