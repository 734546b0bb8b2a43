package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// AgentSecond is one agent's own second of a run over agents (migrations/00008).
type AgentSecond struct {
	Agent  string
	Second int    // elapsed_s of the run: 1 for its first second
	Sample []byte // the agent's sample JSON
}

// Bounds of AgentSeconds' page, in rows (one row = one agent's second). The smallest page holds
// a whole second of the most agents a run may have (1000, the API's bound).
const (
	DefaultAgentRows = 2000
	MinAgentRows     = 1000
	MaxAgentRows     = 10000
)

// AppendAgentSecond stores agent's own second of run runID (its sample JSON) and reports whether
// it was new: a second already stored (an agent's spool replayed after a reconnect) is left as
// it is and false returned. It returns ErrNotFound if the run does not exist.
func (s *Store) AppendAgentSecond(ctx context.Context, runID int64, agent string, second int, sample []byte) (bool, error) {
	var stored bool
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`INSERT OR IGNORE INTO run_agent_seconds (run_id, agent, second, sample)
			SELECT id, ?, ?, ? FROM runs WHERE id = ?`, agent, second, string(sample), runID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			stored = true
			return nil
		}
		var n int64
		if err := tx.Raw("SELECT count(*) FROM runs WHERE id = ?", runID).Scan(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: run %d: agent %s second %d: %w", runID, agent, second, err)
	}
	return stored, nil
}

// AgentSeconds returns a page of run runID's agent seconds from second from on, ordered by
// second then agent: at most limit rows (clamped to MinAgentRows–MaxAgentRows; 0:
// DefaultAgentRows), always whole seconds, and the second the next page starts at (0: none
// left). ErrNotFound if the run does not exist.
func (s *Store) AgentSeconds(ctx context.Context, runID int64, from, limit int) ([]AgentSecond, int, error) {
	if limit <= 0 {
		limit = DefaultAgentRows
	}
	limit = min(max(limit, MinAgentRows), MaxAgentRows)
	db := s.db.WithContext(ctx)
	var rows []struct {
		Agent  string `gorm:"column:agent"`
		Second int    `gorm:"column:second"`
		Sample []byte `gorm:"column:sample"`
	}
	// One row more than the page tells whether another page follows.
	err := db.Raw(`SELECT agent, second, sample FROM run_agent_seconds WHERE run_id = ? AND second >= ?
		ORDER BY second, agent LIMIT ?`, runID, from, limit+1).Scan(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("store: run %d agent seconds: %w", runID, err)
	}
	if len(rows) == 0 {
		var n int64
		if err := db.Raw("SELECT count(*) FROM runs WHERE id = ?", runID).Scan(&n).Error; err != nil {
			return nil, 0, fmt.Errorf("store: run %d agent seconds: %w", runID, err)
		}
		if n == 0 {
			return nil, 0, fmt.Errorf("store: run %d agent seconds: %w", runID, ErrNotFound)
		}
	}
	next := 0
	if len(rows) > limit {
		// The page ends before the last second it reached: that second comes whole next time.
		next = rows[limit].Second
		n := limit
		for n > 0 && rows[n-1].Second == next {
			n--
		}
		rows = rows[:n]
	}
	out := make([]AgentSecond, len(rows))
	for i, r := range rows {
		out[i] = AgentSecond{Agent: r.Agent, Second: r.Second, Sample: r.Sample}
	}
	return out, next, nil
}
