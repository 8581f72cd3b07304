package toolcatalog

import "net/http"

// Handler is every route of the catalog.
func (c *Catalog) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/tools", c.serveGlobalMenu)
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/tools", c.serveCollectionMenu)
	mux.HandleFunc("GET /v1/namespaces/{ns}/mcpservers/{name}/tools", c.serveServerMenu)
	mux.HandleFunc("GET /v1/tools/search", c.searchGlobal)
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/tools/search", c.searchCollection)
	mux.HandleFunc("GET /v1/namespaces/{ns}/mcpservers/{name}/tools/search", c.searchServer)
	mux.HandleFunc("POST /v1/execute", c.executeGlobal)
	mux.HandleFunc("POST /v1/namespaces/{ns}/toolcollections/{name}/execute", c.executeInCollection)
	mux.Handle("/mcp", c.mcp.handler(viewKey{kind: globalView}))
	mux.HandleFunc("/v1/namespaces/{ns}/toolcollections/{name}/mcp", func(w http.ResponseWriter, r *http.Request) {
		c.mcp.handler(viewKey{kind: collectionView, namespace: r.PathValue("ns"), name: r.PathValue("name")}).ServeHTTP(w, r)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})
	return c.traced(mux, c.browsers.middleware(c.authz.middleware(mux)))
}
