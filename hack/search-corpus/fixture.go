package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// listing is what one server gave: kept for SOURCES.md.
type listing struct {
	server server
	count  int
}

// writeFixture writes the tools array indented for review. Indenting changes
// only whitespace: keys, their order and every value stay as the server sent them.
func writeFixture(path string, tools []json.RawMessage) error {
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, t := range tools {
		buf.WriteString("  ")
		if err := json.Indent(&buf, t, "  ", "  "); err != nil {
			return fmt.Errorf("indenting tool %d for %s: %w", i, path, err)
		}
		if i < len(tools)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing fixture %s: %w", path, err)
	}
	return nil
}

// writeSources names the package, version and command behind each fixture.
func writeSources(path string, listed []listing, skipped []server) error {
	var b strings.Builder
	b.WriteString("# Sources of the tool-search corpus\n\n")
	b.WriteString("Each file here is the `tools` array of one server's `tools/list` answer, exactly as the server sent it\n")
	b.WriteString("(only indented), listed over stdio by mcp-go's client with `go run ./hack/search-corpus`.\n")
	b.WriteString("Servers ran with dummy credentials and no network; none was called, only listed.\n\n")
	b.WriteString("| fixture | registry | package | version | arguments | tools |\n")
	b.WriteString("| --- | --- | --- | --- | --- | ---: |\n")
	total := 0
	for _, l := range listed {
		s := l.server
		args := "—"
		if len(s.Args) > 0 {
			args = "`" + strings.Join(s.Args, " ") + "`"
		}
		fmt.Fprintf(&b, "| `%s.json` | %s | `%s` | %s | %s | %d |\n", s.Name, s.Source, s.Package, s.Version, args, l.count)
		total += l.count
	}
	fmt.Fprintf(&b, "\n%d tools from %d servers.\n", total, len(listed))
	notes := false
	for _, l := range listed {
		if l.server.Note == "" {
			continue
		}
		if !notes {
			b.WriteString("\n## Notes\n\n")
			notes = true
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", l.server.Name, l.server.Note)
	}
	if len(skipped) > 0 {
		b.WriteString("\n## Tried and left out\n\n")
		for _, s := range skipped {
			fmt.Fprintf(&b, "- `%s` %s (%s): %s.\n", s.Package, s.Version, s.Source, s.Skip)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
