package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// secretJSON is a stored secret as the API shows it: never its value.
type secretJSON struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toSecretJSON(i store.SecretInfo) secretJSON {
	return secretJSON{Name: i.Name, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
}

func secretName(c *gin.Context) (string, error) {
	name := c.Param("name")
	if !plan.ValidSecretName(name) {
		e := badRequest("%q is not a secret name", name)
		e.Fields = map[string]string{"name": "1-64 letters, digits or _, not starting with a digit"}
		return "", e
	}
	return name, nil
}

func (s *Server) listSecrets(c *gin.Context) (int, any, error) {
	infos, err := s.store.ListSecrets(c.Request.Context())
	if err != nil {
		return 0, nil, err
	}
	out := list[secretJSON]{Items: make([]secretJSON, len(infos)), Total: int64(len(infos))}
	for i, info := range infos {
		out.Items[i] = toSecretJSON(info)
	}
	return http.StatusOK, out, nil
}

// putSecret is PUT /api/secrets/:name {"value": "…"}: 201 when created, 200 when replaced; the
// answer names the secret, never its value. Errors never quote the body.
func (s *Server) putSecret(c *gin.Context) (int, any, error) {
	name, err := secretName(c)
	if err != nil {
		return 0, nil, err
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return 0, nil, unreadableBody()
	}
	var in struct {
		Value *string `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || dec.More() {
		e := badRequest(`the body must be {"value": "…"}`)
		e.Fields = map[string]string{"value": "must be a string"}
		if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
			e.Fields = map[string]string{strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`): "unknown field"}
		}
		return 0, nil, e
	}
	problem := ""
	switch {
	case in.Value == nil:
		problem = "is required (a string)"
	case *in.Value == "":
		problem = "must not be empty (DELETE the secret instead)"
	case len(*in.Value) > plan.MaxSecretValue:
		problem = "must be at most 65536 bytes"
	case !utf8.ValidString(*in.Value):
		problem = "must be UTF-8 text"
	case *in.Value == plan.Masked:
		problem = "is the masked placeholder " + plan.Masked + ", not a value"
	}
	if problem != "" {
		e := badRequest("value %s", problem)
		e.Fields = map[string]string{"value": problem}
		return 0, nil, e
	}
	info, created, err := s.store.PutSecret(c.Request.Context(), name, *in.Value)
	if err != nil {
		return 0, nil, err
	}
	s.audit(c, auth.ActSecretSet, "secret "+name, map[string]any{"created": created})
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return status, toSecretJSON(*info), nil
}

func (s *Server) deleteSecret(c *gin.Context) (int, any, error) {
	name, err := secretName(c)
	if err != nil {
		return 0, nil, err
	}
	if err := s.store.DeleteSecret(c.Request.Context(), name); err != nil {
		return 0, nil, err
	}
	s.audit(c, auth.ActSecretDelete, "secret "+name, nil)
	return http.StatusNoContent, nil, nil
}
