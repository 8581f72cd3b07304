package toolcatalog

import "net/http"

// Handler is every route of the catalog.
func (c *Catalog) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/tools", onMenu(globalView, c.serveMenu))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/tools", onMenu(collectionView, c.serveMenu))
	mux.HandleFunc("GET /v1/namespaces/{ns}/mcpservers/{name}/tools", onMenu(serverView, c.serveMenu))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/prompts", onMenu(collectionView, c.servePrompts))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/resources", onMenu(collectionView, c.serveResources))
	mux.HandleFunc("GET /v1/tools/search", onMenu(globalView, c.serveSearch))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/tools/search", onMenu(collectionView, c.serveSearch))
	mux.HandleFunc("GET /v1/namespaces/{ns}/mcpservers/{name}/tools/search", onMenu(serverView, c.serveSearch))
	mux.HandleFunc("GET /v1/mcpservers", c.serveObjectList(serverObjects))
	mux.HandleFunc("GET /v1/namespaces/{ns}/mcpservers/{name}", c.serveObject(serverObjects))
	mux.HandleFunc("GET /v1/namespaces/{ns}/mcpservers/{name}/events", c.serveEvents(serverObjects))
	mux.HandleFunc("GET /v1/toolcollections", c.serveObjectList(collectionObjects))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}", c.serveObject(collectionObjects))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/events", c.serveEvents(collectionObjects))
	mux.HandleFunc("GET /v1/namespaces/{ns}/toolcollections/{name}/access", c.serveAccess)
	mux.HandleFunc("POST /v1/execute", func(w http.ResponseWriter, r *http.Request) { c.execute(w, r, viewKey{kind: globalView}) })
	mux.HandleFunc("POST /v1/namespaces/{ns}/toolcollections/{name}/execute", onMenu(collectionView, c.execute))
	mux.Handle("/mcp", c.mcp.handler(viewKey{kind: globalView}))
	mux.HandleFunc("/v1/namespaces/{ns}/toolcollections/{name}/mcp", func(w http.ResponseWriter, r *http.Request) {
		c.mcp.handler(viewKey{kind: collectionView, namespace: r.PathValue("ns"), name: r.PathValue("name")}).ServeHTTP(w, r)
	})
	mux.HandleFunc("GET "+metadataPrefix, c.authz.resources.serveMetadata)
	mux.HandleFunc("GET "+metadataPrefix+"/", c.authz.resources.serveMetadata)
	c.mountConsole(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})
	return c.traced(mux, c.browsers.middleware(c.authz.middleware(mux)))
}

// onMenu serves a route about one menu: the global one (a namespace's
// slice of it with ?namespace=), or the collection's or the server's the
// path names.
func onMenu(kind viewKind, serve func(http.ResponseWriter, *http.Request, viewKey)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := viewKey{kind: kind}
		if kind == globalView {
			key.namespace = r.URL.Query().Get("namespace")
		} else {
			key.namespace, key.name = r.PathValue("ns"), r.PathValue("name")
		}
		serve(w, r, key)
	}
}
