package toolcatalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/toolmesh/mcp-operator/internal/menu"
)

// apiError is the body of every error the catalog answers.
type apiError struct {
	Error string `json:"error"`
	// Details lists validation messages, when there are several.
	Details []string `json:"details,omitempty"`
}

func writeError(w http.ResponseWriter, code int, message string, details ...string) {
	writeJSON(w, code, apiError{Error: message, Details: details})
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// answerError answers a failed request with its status code and records it.
func (c *Catalog) answerError(w http.ResponseWriter, key viewKey, tool string, entry *menu.Entry, started time.Time, err error) {
	var reqErr *requestError
	var upErr *upstreamError
	var authErr *authError
	switch {
	case errors.As(err, &authErr):
		c.record(key, tool, entry, started, "forbidden")
		writeAuthError(w, authErr)
	case errors.As(err, &reqErr):
		outcome := "invalid_request"
		switch reqErr.code {
		case http.StatusNotFound:
			outcome = "unknown_tool"
		case http.StatusUnprocessableEntity:
			outcome = "invalid_arguments"
		}
		c.record(key, tool, entry, started, outcome)
		writeError(w, reqErr.code, reqErr.message, reqErr.details...)
	case errors.As(err, &upErr):
		outcome := "upstream_unreachable"
		if upErr.code == http.StatusGatewayTimeout {
			outcome = "upstream_timeout"
		}
		if entry != nil {
			upstreamErrors.WithLabelValues(entry.Namespace+"/"+entry.Server, upErr.kind).Inc()
		}
		c.record(key, tool, entry, started, outcome)
		writeError(w, upErr.code, upErr.Error())
	default:
		c.record(key, tool, entry, started, "internal_error")
		writeError(w, http.StatusInternalServerError, "internal error")
	}
}
