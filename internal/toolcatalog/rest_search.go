package toolcatalog

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Search limits: how many tools one search returns, and how long a query
// may be (the ranking reads only its first 32 words anyway).
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
	maxQueryBytes      = 1000
)

// searchBody is a search answer: the menu's body with the tools ranked
// best first, scores[i] the score of tools[i] (0 to 1, see
// toolsearch.Hit) and servers[i] the MCPServer serving it. They sit beside
// the tools, not inside them, so that tools can be handed to a model API
// as they are, without a key the API does not expect in a tool.
type searchBody struct {
	Revision string         `json:"revision"`
	Tools    []any          `json:"tools"`
	Scores   []float64      `json:"scores"`
	Servers  []searchServer `json:"servers"`
	// NonStrict is as in a menu's body: set in a strict format only.
	NonStrict *[]nonStrictJSON `json:"nonStrict,omitempty"`
}

// roundScore keeps three significant digits of a score: they tell the
// ranks apart, more would be noise, and a tiny share stays above 0.
func roundScore(score float64) float64 {
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(score, 'g', 3, 64), 64)
	return rounded
}

// searchServer names the MCPServer a found tool comes from.
type searchServer struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// searchParams are a search request's q and limit.
type searchParams struct {
	query string
	limit int
}

// searchParamsOf reads a search request's q and limit.
func searchParamsOf(values url.Values) (searchParams, error) {
	p := searchParams{query: strings.TrimSpace(values.Get("q")), limit: defaultSearchLimit}
	switch {
	case p.query == "":
		return p, fmt.Errorf("q is required: say what the tool should do, for example q=read+a+file")
	case len(p.query) > maxQueryBytes:
		return p, fmt.Errorf("q is longer than %d bytes", maxQueryBytes)
	}
	if raw := values.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxSearchLimit {
			return p, fmt.Errorf("limit must be a whole number from 1 to %d, not %q", maxSearchLimit, raw)
		}
		p.limit = n
	}
	return p, nil
}

// serveSearch is the shared body of the three search routes: the menu's
// checks and authorization, then its tools ranked against q. A caller who
// may not see every tool (callerView) gets the best of the tools they may
// see, and the revision of the menu they would be served.
func (c *Catalog) serveSearch(w http.ResponseWriter, req *http.Request, key viewKey) {
	format, err := formatOf(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	params, err := searchParamsOf(req.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	vw, ok := c.readableView(w, req, key)
	if !ok {
		return
	}
	visible, err := c.callerView(req.Context(), key, vw)
	if err != nil {
		writeAuthError(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, searchResult(visible.revision, visible.rank(params.query, params.limit, nil), format))
}

// searchResult renders ranked tools in a format.
func searchResult(revision string, ranked []rankedTool, format string) searchBody {
	body := searchBody{Revision: revision, Tools: make([]any, len(ranked)), Scores: make([]float64, len(ranked)),
		Servers: make([]searchServer, len(ranked))}
	if _, strict := baseFormat(format); strict {
		body.NonStrict = &[]nonStrictJSON{}
	}
	for i, r := range ranked {
		served := schemaIn(r.entry, format)
		if served.reason != "" {
			*body.NonStrict = append(*body.NonStrict, nonStrictJSON{Name: r.entry.Name, Reason: served.reason})
		}
		body.Tools[i] = renderTool(r.entry, format, served)
		body.Scores[i] = roundScore(r.score)
		body.Servers[i] = searchServer{Namespace: r.entry.Namespace, Name: r.entry.Server}
	}
	return body
}
