package toolcatalog

import (
	"encoding/json"
	"net/http"
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
