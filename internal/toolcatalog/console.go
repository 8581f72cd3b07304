package toolcatalog

import (
	"net/http"
	"strings"

	"github.com/toolmesh/mcp-operator/internal/console"
)

// ConsoleOptions configure the console: a web page for people, served by
// the catalog under /ui/ (internal/console). The page is static and
// public; every piece of data it shows comes from the API routes, with
// the viewer's token and the same authorization as any client's.
type ConsoleOptions struct {
	// Enabled serves the console.
	Enabled bool
	// TryIt offers forms that call a tool from the page, to viewers who
	// may execute the collection's tools. Off, the page offers none; the
	// execute route is unchanged either way.
	TryIt bool
}

// consolePrefix is where the console is served.
const consolePrefix = "/ui"

// isConsolePath says path is the console's: its files need no token.
func isConsolePath(path string) bool {
	return path == consolePrefix || strings.HasPrefix(path, consolePrefix+"/")
}

// mountConsole serves the console when it is enabled.
func (c *Catalog) mountConsole(mux *http.ServeMux) {
	if !c.opts.Console.Enabled {
		return
	}
	page := console.Handler(console.Config{Auth: string(c.opts.Auth), TryIt: c.opts.Console.TryIt})
	mux.Handle("GET "+consolePrefix, page)
	mux.Handle("GET "+consolePrefix+"/", page)
}
