// Package examples holds example plans; the server seeds Demo into an empty database.
package examples

import _ "embed"

// Demo is a plan against the built-in demo target (`volley target`, 127.0.0.1:8090).
//
//go:embed demo.json
var Demo []byte

// WSEcho is a plan of WebSocket sessions against the demo target's echo (`/ws/echo`); its request
// is README's WebSocket example.
//
//go:embed ws-echo.json
var WSEcho []byte
