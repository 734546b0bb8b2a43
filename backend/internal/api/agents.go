package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/volley-load/volley/backend/internal/cluster"
)

// Agents is the controller's view of its remote agents (volley serve --agents-listen).
type Agents interface {
	List() []cluster.Agent // agents seen within the presence TTL, by id
	JoinToken() string     // the token agents join with
	URL() string           // nats://host:port of the agents listener
}

// WithAgents serves the agents (GET /api/agents) and the join token (GET /api/agents/token, an
// admin's). Without it the server has no agents listener: the list is empty and the token 409.
func WithAgents(a Agents) Option { return func(s *Server) { s.agents = a } }

// agentList is GET /api/agents: {"listening": bool, "agents": [Agent…]}.
func (s *Server) agentList(*gin.Context) (int, any, error) {
	if s.agents == nil {
		return http.StatusOK, gin.H{"listening": false, "agents": []cluster.Agent{}}, nil
	}
	return http.StatusOK, gin.H{"listening": true, "agents": s.agents.List()}, nil
}

// agentToken is GET /api/agents/token: {"token", "url"}; 409 agents_listener_off without a listener.
func (s *Server) agentToken(*gin.Context) (int, any, error) {
	if s.agents == nil {
		return 0, nil, errf(http.StatusConflict, "agents_listener_off",
			"this server has no agents listener: start volley serve with --agents-listen HOST:PORT")
	}
	return http.StatusOK, gin.H{"token": s.agents.JoinToken(), "url": s.agents.URL()}, nil
}
