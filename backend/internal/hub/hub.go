// Package hub streams runs to browsers over websockets. Each active run is a topic holding the
// messages sent so far, so a client that joins late first receives every second so far and then
// the live ones, with no gap and no repeat. Messages are encoded once and shared by all clients;
// a client that cannot keep up is disconnected, never waited for.
//
// It imports gorilla/websocket and the standard library only.
package hub

import (
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	writeWait  = 10 * time.Second
	pingPeriod = 25 * time.Second
	pongWait   = 60 * time.Second
	// clientBuffer is how many live messages a client may lag before it is dropped.
	clientBuffer = 64
)

// Hub holds one topic per active run.
type Hub struct {
	mu       sync.Mutex
	topics   map[int64]*topic
	upgrader websocket.Upgrader
}

type topic struct {
	history [][]byte
	clients map[*client]struct{}
	closed  bool
	seeded  bool // made by Seed: the next Open keeps it
}

type client struct {
	send chan []byte
	once sync.Once
}

func (c *client) drop() { c.once.Do(func() { close(c.send) }) }

// New makes a hub. checkOrigin may be nil (same-origin only, gorilla's default).
func New(checkOrigin func(r *http.Request) bool) *Hub {
	return &Hub{topics: map[int64]*topic{}, upgrader: websocket.Upgrader{
		ReadBufferSize: 1024, WriteBufferSize: 16 * 1024, CheckOrigin: checkOrigin,
		EnableCompression: false,
	}}
}

// Open creates the topic of a run that is starting. A topic Seed made is kept as it is (once:
// the Open after that makes a new one).
func (h *Hub) Open(runID int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[runID]; t != nil && t.seeded {
		t.seeded = false
		return
	}
	h.topics[runID] = &topic{clients: map[*client]struct{}{}}
}

// Seed opens the topic of a run that goes on after a restart with history, the messages of its
// seconds stored so far (the hub keeps the slice), so that a viewer who joins — or rejoins —
// gets every second again, then the live ones. The run's Open that follows keeps this topic.
func (h *Hub) Seed(runID int64, history [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.topics[runID]; old != nil { // a topic replaced ends its viewers' streams
		for c := range old.clients {
			c.drop()
		}
	}
	h.topics[runID] = &topic{history: history, clients: map[*client]struct{}{}, seeded: true}
}

// Publish appends msg to the run's history and sends it to every client, dropping clients whose
// buffer is full.
func (h *Hub) Publish(runID int64, msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[runID]
	if t == nil || t.closed {
		return
	}
	t.history = append(t.history, msg)
	for c := range t.clients {
		select {
		case c.send <- msg:
		default:
			delete(t.clients, c)
			c.drop()
		}
	}
}

// Close publishes the final message, ends every client's stream after it, and forgets the topic
// (later viewers are served from storage).
func (h *Hub) Close(runID int64, final []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[runID]
	if t == nil {
		return
	}
	for c := range t.clients {
		select {
		case c.send <- final:
		default:
		}
		c.drop()
	}
	t.closed = true
	delete(h.topics, runID)
}

// Active reports whether the run has an open topic.
func (h *Hub) Active(runID int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.topics[runID]
	return ok
}

// Clients counts the live-stream clients connected now, over every run (volley_live_clients).
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.topics {
		n += len(t.clients)
	}
	return n
}

// Serve upgrades the request and streams run runID: the history so far, then live messages until
// the run ends. When the run has no topic, stored() supplies the whole stream (samples and
// summary of a finished run) and the connection is closed after it.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, runID int64, stored func() ([][]byte, error)) error {
	var history [][]byte
	c := &client{send: make(chan []byte, clientBuffer)}
	h.mu.Lock()
	t := h.topics[runID]
	if t != nil {
		history = append([][]byte(nil), t.history...)
		t.clients[c] = struct{}{}
	}
	h.mu.Unlock()
	if t == nil {
		msgs, err := stored()
		if err != nil {
			return err
		}
		history = msgs
		c.drop()
	}
	conn, err := h.upgrader.Upgrade(w, r, w.Header()) // the headers set so far (e.g. the request id) go with the 101
	if err != nil {
		h.unsubscribe(runID, c)
		return nil // the upgrader has answered the client
	}
	go h.readPump(conn, runID, c)
	h.writePump(conn, history, c)
	return nil
}

func (h *Hub) unsubscribe(runID int64, c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[runID]; t != nil {
		if _, ok := t.clients[c]; ok {
			delete(t.clients, c)
			c.drop()
		}
	}
}

// readPump discards client messages and notices when the client goes away.
func (h *Hub) readPump(conn *websocket.Conn, runID int64, c *client) {
	defer h.unsubscribe(runID, c)
	conn.SetReadLimit(4096)
	_ = conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}

func (h *Hub) writePump(conn *websocket.Conn, history [][]byte, c *client) {
	ping := time.NewTicker(pingPeriod)
	defer func() {
		ping.Stop()
		_ = conn.Close()
	}()
	for _, m := range history {
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		if err := conn.WriteMessage(websocket.TextMessage, m); err != nil {
			return
		}
	}
	for {
		select {
		case m, ok := <-c.send:
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if !ok {
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "run ended"))
				return
			}
			if err := conn.WriteMessage(websocket.TextMessage, m); err != nil {
				return
			}
		case <-ping.C:
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}
