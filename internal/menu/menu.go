// Package menu resolves what one ToolCollection offers: which MCPServers it
// selects, which of their tools pass its filters, what overrides rename or
// redescribe, and which server wins a contested name. It is pure (no I/O),
// so the ToolCollection controller and the catalog resolve menus the same
// way from the same objects.
package menu

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/glob"
)

// FunctionCallingLimit is the most tools many function-calling APIs accept
// in one request.
const FunctionCallingLimit = 128

// Entry is one tool of a resolved menu.
type Entry struct {
	// Name is the exposed name in this menu (after any rename).
	Name string
	// Namespace and Server name the MCPServer that serves the tool.
	Namespace string
	Server    string
	// Tool is the definition from the MCPServer's status.
	Tool *mcpv1alpha1.Tool
	// Description is what the agent sees: the override, or the tool's own.
	Description string
}

// Server is one selected MCPServer.
type Server struct {
	Name      string
	Ready     bool
	ToolCount int
}

// Conflict is a name more than one tool claims; Servers[0] won.
type Conflict struct {
	Name    string
	Servers []string
}

// Menu is a resolved ToolCollection.
type Menu struct {
	Servers   []Server
	Tools     []Entry
	Conflicts []Conflict
	// UnmatchedOverrides name tools no selected, Ready server offers.
	UnmatchedOverrides []string
	// LeftOut counts tools past spec.maxTools.
	LeftOut int
	// Unapproved are tools spec.pinning does not approve; with mode
	// Enforce they are not in Tools.
	Unapproved []Unapproved
	// Withheld are the tools of selected servers that are not Ready, named
	// as the menu would name them: not offered, but known, so a call gets
	// "server not ready" rather than "no such tool".
	Withheld []Entry
	// Refused are the tools of Tools that MCP clients cannot be offered
	// (see Refusal): served over REST, left out of MCP endpoints.
	Refused []Entry
}

// Unapproved is a tool whose definition hash is not the approved one.
type Unapproved struct {
	Name, Server, ApprovedHash, CurrentHash string
}

// InvalidSpecError is a collection spec that cannot be resolved until it
// changes.
type InvalidSpecError struct{ Message string }

func (e *InvalidSpecError) Error() string { return e.Message }

// Validate checks what the API server cannot: selector syntax and globs.
func Validate(spec *mcpv1alpha1.ToolCollectionSpec) error {
	if spec.Servers.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(spec.Servers.Selector); err != nil {
			return &InvalidSpecError{Message: fmt.Sprintf("spec.servers.selector is not valid: %v", err)}
		}
	}
	if spec.Tools != nil {
		if p, bad := glob.FirstInvalid(spec.Tools.Include, spec.Tools.Exclude); bad {
			return &InvalidSpecError{Message: fmt.Sprintf("spec.tools pattern %q is not a valid glob", p)}
		}
	}
	if spec.Prompts != nil {
		if p, bad := glob.FirstInvalid(spec.Prompts.Include, spec.Prompts.Exclude); bad {
			return &InvalidSpecError{Message: fmt.Sprintf("spec.prompts pattern %q is not a valid glob", p)}
		}
	}
	return nil
}

// Selects reports whether the collection selects the server. The spec
// must have passed Validate.
func Selects(spec *mcpv1alpha1.ToolCollectionSpec, srv *mcpv1alpha1.MCPServer) bool {
	for _, n := range spec.Servers.Names {
		if n == srv.Name {
			return true
		}
	}
	if spec.Servers.Selector == nil {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(spec.Servers.Selector)
	return err == nil && selector.Matches(labels.Set(srv.Labels))
}

// IsReady reports whether an MCPServer's Ready condition is True for its
// current generation.
func IsReady(srv *mcpv1alpha1.MCPServer) bool {
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue
}

// ForCollection builds the menu of spec over the servers of its namespace.
// Tools of servers that are not Ready are left out until they recover.
// Like Global, it only reads the servers and points into them: callers
// hand it the informer cache's own objects, shared with every reader.
func ForCollection(spec *mcpv1alpha1.ToolCollectionSpec, servers []mcpv1alpha1.MCPServer) Menu {
	var m Menu
	var overrides []mcpv1alpha1.ToolOverride
	if spec.Tools != nil {
		overrides = spec.Tools.Overrides
	}
	matched := make([]bool, len(overrides))
	// Candidates in server name order, then tool name order: the first
	// claim on a name wins, which makes the winner deterministic.
	var candidates []Entry
	for _, srv := range selected(spec, servers) {
		offered, withheld := offers(spec.Tools, srv, overrides, matched)
		candidates = append(candidates, offered...)
		m.Withheld = append(m.Withheld, withheld...)
		m.Servers = append(m.Servers, Server{Name: srv.Name, Ready: IsReady(srv)})
	}
	m.claim(spec.Pinning, candidates)
	if spec.MaxTools != nil && len(m.Tools) > int(*spec.MaxTools) {
		m.LeftOut = len(m.Tools) - int(*spec.MaxTools)
		m.Tools = m.Tools[:*spec.MaxTools]
	}
	m.countServed()
	m.Refused = refused(m.Tools)
	for i, o := range overrides {
		if !matched[i] {
			m.UnmatchedOverrides = append(m.UnmatchedOverrides, o.Name)
		}
	}
	return m
}

// selected are the servers spec selects, in name order.
func selected(spec *mcpv1alpha1.ToolCollectionSpec, servers []mcpv1alpha1.MCPServer) []*mcpv1alpha1.MCPServer {
	picked := make([]*mcpv1alpha1.MCPServer, 0, len(servers))
	for i := range servers {
		if Selects(spec, &servers[i]) {
			picked = append(picked, &servers[i])
		}
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].Name < picked[j].Name })
	return picked
}

// offers are the server's tools that pass the selection, named and
// described as the overrides say: offered when the server is Ready,
// withheld otherwise. matched records which overrides applied to a Ready
// server.
func offers(sel *mcpv1alpha1.ToolSelection, srv *mcpv1alpha1.MCPServer, overrides []mcpv1alpha1.ToolOverride, matched []bool) (offered, withheld []Entry) {
	ready := IsReady(srv)
	for i := range srv.Status.Tools {
		tool := &srv.Status.Tools[i]
		if !passes(tool.Name, sel) {
			continue
		}
		entry := Entry{Name: tool.Name, Namespace: srv.Namespace, Server: srv.Name, Tool: tool, Description: tool.Description}
		if i := overrideFor(overrides, srv.Name, tool.Name); i >= 0 {
			o := overrides[i]
			matched[i] = matched[i] || ready
			if o.Rename != "" {
				entry.Name = o.Rename
			}
			if o.Description != nil {
				entry.Description = *o.Description
			}
		}
		if ready {
			offered = append(offered, entry)
		} else {
			withheld = append(withheld, entry)
		}
	}
	return offered, withheld
}

// claim gives each name to its first candidate that pinning lets through,
// and lists the names claimed more than once.
func (m *Menu) claim(pinning *mcpv1alpha1.ToolPinning, candidates []Entry) {
	claims := map[string][]string{}
	for _, c := range candidates {
		if _, taken := claims[c.Name]; !taken {
			if approved, ok := pinned(pinning, c); !ok {
				m.Unapproved = append(m.Unapproved, Unapproved{Name: c.Name, Server: c.Server, ApprovedHash: approved, CurrentHash: c.Tool.Hash})
				if pinning.Mode != mcpv1alpha1.PinningWarn {
					claims[c.Name] = append(claims[c.Name], c.Server)
					continue
				}
			}
			m.Tools = append(m.Tools, c)
		}
		claims[c.Name] = append(claims[c.Name], c.Server)
	}
	sort.Slice(m.Unapproved, func(i, j int) bool { return m.Unapproved[i].Name < m.Unapproved[j].Name })
	for name, servers := range claims {
		if len(servers) > 1 {
			m.Conflicts = append(m.Conflicts, Conflict{Name: name, Servers: servers})
		}
	}
	sort.Slice(m.Conflicts, func(i, j int) bool { return m.Conflicts[i].Name < m.Conflicts[j].Name })
	m.Tools = sortedByName(m.Tools)
}

// countServed sets each server's count to the tools it actually serves in
// the menu.
func (m *Menu) countServed() {
	served := map[string]int{}
	for _, t := range m.Tools {
		served[t.Server]++
	}
	for i := range m.Servers {
		m.Servers[i].ToolCount = served[m.Servers[i].Name]
	}
}

// pinned reports whether pinning approves the entry's definition, and the
// hash it approves.
func pinned(p *mcpv1alpha1.ToolPinning, e Entry) (string, bool) {
	if p == nil {
		return "", true
	}
	approved := p.Approved[e.Name]
	return approved, approved != "" && approved == e.Tool.Hash
}

// overrideFor returns the index of the first override of the server's
// tool, or -1.
func overrideFor(overrides []mcpv1alpha1.ToolOverride, server, tool string) int {
	for i, o := range overrides {
		if o.Name == tool && (o.Server == "" || o.Server == server) {
			return i
		}
	}
	return -1
}

// Global is every tool of every Ready server, each exposed name once: the
// first claim in namespace, then server name order wins, and the others are
// listed as conflicts (servers named namespace/name).
func Global(servers []mcpv1alpha1.MCPServer) Menu {
	var m Menu
	ordered := make([]*mcpv1alpha1.MCPServer, 0, len(servers))
	for i := range servers {
		srv := &servers[i]
		if IsReady(srv) {
			ordered = append(ordered, srv)
			continue
		}
		for j := range srv.Status.Tools {
			tool := &srv.Status.Tools[j]
			m.Withheld = append(m.Withheld, Entry{Name: tool.Name, Namespace: srv.Namespace, Server: srv.Name, Tool: tool, Description: tool.Description})
		}
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].Namespace != ordered[j].Namespace {
			return ordered[i].Namespace < ordered[j].Namespace
		}
		return ordered[i].Name < ordered[j].Name
	})
	total := 0
	for _, srv := range ordered {
		total += len(srv.Status.Tools)
	}
	m.Tools = make([]Entry, 0, total)
	for _, srv := range ordered {
		for i := range srv.Status.Tools {
			tool := &srv.Status.Tools[i]
			m.Tools = append(m.Tools, Entry{Name: tool.Name, Namespace: srv.Namespace, Server: srv.Name, Tool: tool, Description: tool.Description})
		}
	}
	// In server order, then sorted by name keeping that order among equal
	// names: the first server to claim a name wins it.
	m.Tools, m.Conflicts = firstClaims(sortedByName(m.Tools))
	m.Refused = refused(m.Tools)
	return m
}

// passes applies spec.tools include and exclude to an exposed name.
func passes(name string, sel *mcpv1alpha1.ToolSelection) bool {
	return sel == nil || glob.Keep(name, sel.Include, sel.Exclude)
}

// AppendPart appends p to buf after its length, as hashes of menus take
// their parts: so prefixed, no two sequences of parts give the same bytes.
func AppendPart[P string | []byte](buf []byte, p P) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(p)))
	return append(buf, p...)
}

// Hash identifies what an agent would see: names, titles, descriptions and
// definitions, in name order. A definition counts by the hash the
// controller put in status (it covers schemas, annotations, icons,
// execution and _meta as the server sent them), which spares hashing
// every schema of a menu of thousands again on each change; a tool
// without one counts by its schemas as stored. Each part is
// length-prefixed, so no two menus share the bytes hashed.
func (m Menu) Hash() string {
	h := sha256.New()
	var buf []byte // one tool's parts, written at once
	part := func(b []byte) { buf = AppendPart(buf, b) }
	text := func(s string) { buf = AppendPart(buf, s) }
	for _, t := range m.Tools {
		buf = buf[:0]
		text(t.Name)
		text(t.Tool.Title)
		text(t.Description)
		if t.Tool.Hash != "" {
			text(t.Tool.Hash)
		} else {
			var output []byte
			if t.Tool.OutputSchema != nil {
				output = t.Tool.OutputSchema.Raw
			}
			part(t.Tool.InputSchema.Raw)
			part(output) // always a part, so that the parts of two tools never run together
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}
