// Package examples holds example plans; the server seeds Demo into an empty database.
package examples

import _ "embed"

// Demo is a plan against the built-in demo target (`volley target`, 127.0.0.1:8090).
//
//go:embed demo.json
var Demo []byte
