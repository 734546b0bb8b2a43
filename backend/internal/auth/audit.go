package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Audit actions.
const (
	ActLogin        = "login"
	ActLoginFailed  = "login_failed"
	ActLogout       = "logout"
	ActUserCreate   = "user.create"
	ActUserUpdate   = "user.update"
	ActUserDelete   = "user.delete"
	ActTokenCreate  = "token.create"
	ActTokenRevoke  = "token.revoke"
	ActRunStart     = "run.start"
	ActRunStop      = "run.stop"
	ActRunDelete    = "run.delete"
	ActRunControl   = "run.control"
	ActPlanCreate   = "plan.create"
	ActPlanUpdate   = "plan.update"
	ActPlanDelete   = "plan.delete"
	ActPlanSend     = "plan.send"
	ActSecretSet    = "secret.set"
	ActSecretDelete = "secret.delete"
)

// CLIActor is the actor of changes made with the volley user and volley secret commands.
const CLIActor = "cli"

// Entry is one audit log line.
type Entry struct {
	ID     int64
	At     time.Time
	Actor  string         // user name, LocalUser or CLIActor
	Action string         // one of the Act… constants
	Target string         // what it acted on: "user ann", "token 3", "run 12", "plan 4", "secret API_KEY"
	Detail map[string]any // e.g. {"plan_id": 1, "plan_name": "…", "hosts": ["127.0.0.1:8090"]}
	Addr   string         // the client address ("" from the CLI)
}

type entryRow struct {
	ID     int64     `gorm:"column:id"`
	At     time.Time `gorm:"column:at"`
	Actor  string    `gorm:"column:actor"`
	Action string    `gorm:"column:action"`
	Target string    `gorm:"column:target"`
	Detail string    `gorm:"column:detail"`
	Addr   string    `gorm:"column:addr"`
}

// Audit appends an entry (At is set to now). Detail must not hold secrets.
func (s *Service) Audit(ctx context.Context, e Entry) error {
	detail := []byte("{}")
	if len(e.Detail) > 0 {
		b, err := json.Marshal(e.Detail)
		if err != nil {
			return fmt.Errorf("auth: audit detail: %w", err)
		}
		detail = b
	}
	return wrap("audit", s.write(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
		return tx.Exec("INSERT INTO audit_log (at, actor, action, target, detail, addr) VALUES (?, ?, ?, ?, ?, ?)",
			s.utcNow(), e.Actor, e.Action, e.Target, string(detail), e.Addr).Error
	}))
}

// AuditLog returns a page of entries, newest first, and the total count.
func (s *Service) AuditLog(ctx context.Context, limit, offset int) ([]Entry, int64, error) {
	db := s.read(ctx)
	var total int64
	if err := db.Raw("SELECT count(*) FROM audit_log").Scan(&total).Error; err != nil {
		return nil, 0, wrap("audit log", err)
	}
	var rows []entryRow
	if err := db.Raw("SELECT id, at, actor, action, target, detail, addr FROM audit_log ORDER BY id DESC LIMIT ? OFFSET ?",
		limit, offset).Scan(&rows).Error; err != nil {
		return nil, 0, wrap("audit log", err)
	}
	out := make([]Entry, len(rows))
	for i, r := range rows {
		out[i] = Entry{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, Target: r.Target, Addr: r.Addr}
		_ = json.Unmarshal([]byte(r.Detail), &out[i].Detail)
	}
	return out, total, nil
}
