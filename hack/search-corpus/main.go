// Command search-corpus regenerates the tool-search corpus of
// internal/toolsearch: it installs each MCP server named in servers.json from
// its registry (npm or the Go module proxy), starts it over stdio with dummy
// credentials, lists its tools with a real MCP client, and writes the tools
// array exactly as the server sent it to testdata/corpus/<server>.json, with
// SOURCES.md naming each package and version. CI does not run it: the
// fixtures are committed, and rerunning it is how they are refreshed.
//
//	go run ./hack/search-corpus -out internal/toolsearch/testdata/corpus
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"
)

// server is one entry of servers.json: where a server comes from and how it
// starts. Env holds only dummy values: listing tools needs no real account.
type server struct {
	Name    string            `json:"name"`
	Source  string            `json:"source"` // "npm" or "go"
	Package string            `json:"package"`
	Version string            `json:"version"`
	Bin     string            `json:"bin,omitempty"` // executable name, when the package has several
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Note    string            `json:"note,omitempty"`
	Skip    string            `json:"skip,omitempty"` // why it is not in the corpus
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

// run lists every server the config names and writes the fixtures.
func run() error {
	config := flag.String("servers", "hack/search-corpus/servers.json", "servers to list")
	out := flag.String("out", "internal/toolsearch/testdata/corpus", "directory for the fixtures")
	work := flag.String("work", "", "directory to install servers into (default: a temporary one)")
	only := flag.String("only", "", "list only this server")
	timeout := flag.Duration("timeout", 90*time.Second, "time allowed to start and list one server")
	flag.Parse()

	servers, err := readServers(*config)
	if err != nil {
		return err
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "search-corpus-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	configDir, err := filepath.Abs(filepath.Dir(*config))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var listed []listing
	var skipped []server
	for _, s := range servers {
		if *only != "" && s.Name != *only {
			continue
		}
		if s.Skip != "" {
			skipped = append(skipped, s)
			continue
		}
		l, err := harvest(s, dir, *out, configDir, *timeout)
		if err != nil {
			log.Printf("%s: %v", s.Name, err)
			continue
		}
		log.Printf("%s: %d tools", s.Name, l.count)
		listed = append(listed, l)
	}
	if *only == "" {
		if err := writeSources(filepath.Join(*out, "SOURCES.md"), listed, skipped); err != nil {
			return err
		}
	}
	return nil
}

// harvest installs one server, lists its tools and writes its fixture.
func harvest(s server, dir, out, configDir string, timeout time.Duration) (listing, error) {
	command, err := install(s, filepath.Join(dir, s.Name))
	if err != nil {
		return listing{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tools, err := listTools(ctx, s, command, filepath.Join(dir, s.Name, "home"), configDir)
	if err != nil {
		return listing{}, err
	}
	if len(tools) == 0 {
		return listing{}, fmt.Errorf("listing tools of %s: the server listed none", s.Name)
	}
	if err := writeFixture(filepath.Join(out, s.Name+".json"), tools); err != nil {
		return listing{}, err
	}
	return listing{server: s, count: len(tools)}, nil
}

func readServers(path string) ([]server, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading server list: %w", err)
	}
	var servers []server
	if err := json.Unmarshal(raw, &servers); err != nil {
		return nil, fmt.Errorf("decoding server list %s: %w", path, err)
	}
	return servers, nil
}
