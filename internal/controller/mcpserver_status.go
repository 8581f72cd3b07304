package controller

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/toolname"
)

// statusEquality compares statuses as the API server sees them: schemas are
// equal when their JSON is, since the API server re-encodes what it stores
// (sorted keys, no spaces) and byte comparison would see a change on every
// refresh.
var statusEquality = func() conversion.Equalities {
	e := equality.Semantic.Copy()
	if err := e.AddFunc(func(a, b runtime.RawExtension) bool { return jsonEqual(a.Raw, b.Raw) }); err != nil {
		panic(err)
	}
	return e
}()

func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// publishedTools filters a server's tools by spec.toolFilter, gives them
// their exposed names and sorts them by that name.
func publishedTools(prefix string, discovered []mcpclient.Tool, filter *mcpv1alpha1.ToolFilter, maxDescription int) []mcpv1alpha1.Tool {
	var kept []mcpclient.Tool
	for _, t := range discovered {
		if passesFilter(t.Name, filter) {
			kept = append(kept, t)
		}
	}
	originals := make([]string, len(kept))
	for i, t := range kept {
		originals[i] = t.Name
	}
	exposed := toolname.Expose(prefix, originals)
	tools := make([]mcpv1alpha1.Tool, len(kept))
	for i, t := range kept {
		// The JSON fields go into status in canonical form, which is how the
		// API server stores them, so that a refresh finds an unchanged
		// schema byte for byte equal to the one status holds and jsonEqual
		// need not decode both (with the server's own key order it did,
		// for every tool, twice a refresh).
		canonical, hash := t.Canonical()
		tools[i] = mcpv1alpha1.Tool{
			Name:         exposed[i],
			OriginalName: t.Name,
			Title:        t.Title,
			Description:  t.Description,
			InputSchema:  runtime.RawExtension{Raw: canonical.InputSchema},
			Annotations:  annotations(t.Annotations),
			Hash:         hash,
		}
		tools[i].Description, tools[i].Warnings = reviewText(t.Name, t.Description, maxDescription)
		if len(canonical.OutputSchema) > 0 {
			tools[i].OutputSchema = &runtime.RawExtension{Raw: canonical.OutputSchema}
		}
		tools[i].Warnings = append(tools[i].Warnings, keepClientFields(&tools[i], canonical)...)
		if refusal := menu.Refusal(&tools[i]); refusal != "" {
			tools[i].Warnings = append(tools[i].Warnings, refusal)
		}
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools
}

// reviewText cuts a description past the limit and says what a person
// reviewing the tool should know: tool descriptions go straight into a
// model's context, and a server can hide instructions in them.
func reviewText(name, description string, limit int) (string, []string) {
	var warnings []string
	if hidden := invisible(name); hidden != "" {
		warnings = append(warnings, "the name contains invisible characters: "+hidden)
	}
	if hidden := invisible(description); hidden != "" {
		warnings = append(warnings, "the description contains invisible characters: "+hidden)
	}
	if limit > 0 && len(description) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(description[cut]) {
			cut--
		}
		warnings = append(warnings, fmt.Sprintf("the description was cut from %d to %d bytes", len(description), cut))
		description = description[:cut]
	}
	return description, warnings
}

// invisible lists the distinct control and format characters of s (zero
// width spaces, bidirectional overrides, tag characters), line breaks and
// tabs aside.
func invisible(s string) string {
	var found []string
	seen := map[rune]bool{}
	for _, r := range s {
		hidden := unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
		if !hidden || r == '\n' || r == '\r' || r == '\t' || seen[r] {
			continue
		}
		seen[r] = true
		found = append(found, fmt.Sprintf("U+%04X", r))
	}
	return strings.Join(found, ", ")
}

// annotations keeps the hints the API knows; a server that sends
// something else there is not an error.
func annotations(raw json.RawMessage) *mcpv1alpha1.ToolAnnotations {
	if len(raw) == 0 {
		return nil
	}
	var a mcpv1alpha1.ToolAnnotations
	if err := json.Unmarshal(raw, &a); err != nil || a == (mcpv1alpha1.ToolAnnotations{}) {
		return nil
	}
	return &a
}

// withinBudget keeps the first tools, in name order, whose serialized size
// fits the budget: etcd refuses objects over about 1.5 MiB.
func withinBudget(tools []mcpv1alpha1.Tool, budget int) (kept []mcpv1alpha1.Tool, left int) {
	used := 0
	for i, t := range tools {
		raw, _ := json.Marshal(t)
		if used+len(raw) > budget {
			return tools[:i], len(tools) - i
		}
		used += len(raw)
	}
	return tools, 0
}

// toolsHash identifies the published list: the catalog revision for this
// server.
func toolsHash(tools []mcpv1alpha1.Tool) string {
	h := sha256.New()
	for _, t := range tools {
		fmt.Fprintf(h, "%s\x00%s\x00", t.Name, t.Hash)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// toolChanges names what differs between two published lists.
type toolChanges struct{ added, removed, changed []string }

func (c toolChanges) empty() bool { return len(c.added)+len(c.removed)+len(c.changed) == 0 }

// eventNames is how many names of each list an Event message holds: three
// lists of this many names of toolname.MaxLength fit maxEventNote.
const eventNames = 4

// String reads as an Event message: "added a,b; removed c; changed d".
func (c toolChanges) String() string {
	var parts []string
	for _, p := range []struct {
		verb  string
		names []string
	}{{"added", c.added}, {"removed", c.removed}, {"changed", c.changed}} {
		if len(p.names) > 0 {
			parts = append(parts, p.verb+" "+abbreviate(p.names, eventNames))
		}
	}
	return strings.Join(parts, "; ")
}

func diffTools(before, after []mcpv1alpha1.Tool) toolChanges {
	old := make(map[string]string, len(before))
	for _, t := range before {
		old[t.Name] = t.Hash
	}
	var c toolChanges
	for _, t := range after {
		hash, ok := old[t.Name]
		switch {
		case !ok:
			c.added = append(c.added, t.Name)
		case hash != t.Hash:
			c.changed = append(c.changed, t.Name)
		}
		delete(old, t.Name)
	}
	for name := range old {
		c.removed = append(c.removed, name)
	}
	sort.Strings(c.removed)
	return c
}

// abbreviate lists at most n names, so that an Event stays short.
func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ","), len(names)-n)
}

// setCondition sets one condition for the object's current generation.
// A new transition's time is in whole seconds, as the API server keeps
// it, so that a condition written and read back equals the one in memory
// (a status that did not change is not written again).
func setCondition(srv *mcpv1alpha1.MCPServer, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&srv.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: srv.Generation,
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
	})
}

// markReconciling says a new generation is being worked on. Ready stays
// as it was, for the generation it names: the last tools keep being
// served (the menus read Ready) while a change that may not touch them at
// all is rediscovered, and kstatus (Reconciling=True, observedGeneration)
// and kubectl wait (which ignores a condition of an older generation)
// still wait for the new generation.
func markReconciling(srv *mcpv1alpha1.MCPServer) {
	setCondition(srv, mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing,
		"Discovering the tools of generation "+fmt.Sprint(srv.Generation))
}

// markRollingOut says the generation waits for its workload's rollout.
// Ready and the tools stay as they were: the previous pods serve them,
// and the tools are read from the new ones once they are all up.
func markRollingOut(srv *mcpv1alpha1.MCPServer, message string) {
	setCondition(srv, mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonRolloutInProgress, message)
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionStalled)
}

// rolledOut takes back what markRollingOut said once the rollout is done:
// a generation not yet finished goes on to discovery, a finished one
// (a rollout restart, say) is no longer reconciling.
func rolledOut(srv *mcpv1alpha1.MCPServer) {
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	if c == nil || c.Reason != mcpv1alpha1.ReasonRolloutInProgress {
		return
	}
	if srv.Status.ObservedGeneration == srv.Generation {
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
		return
	}
	markReconciling(srv)
}

// markRolloutStalled records a rollout past the Deployment's progress
// deadline: the generation is handled and cannot finish until the spec or
// the cluster changes. Ready stays as it was while pods of the previous
// rollout serve, so their tools stay in the menus.
func markRolloutStalled(srv *mcpv1alpha1.MCPServer, e *workloadError) {
	if !e.rolling {
		markStalled(srv, e.reason, e.message)
		return
	}
	setCondition(srv, mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, e.reason, e.message)
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	srv.Status.ObservedGeneration = srv.Generation
}

// startsGeneration reports whether the object's generation is not taken
// up yet: not observed, and Reconciling does not speak for it. A retry
// after a failure keeps its Ready=False reason instead of flapping
// through Unknown.
func startsGeneration(srv *mcpv1alpha1.MCPServer) bool {
	if srv.Status.ObservedGeneration == srv.Generation {
		return false
	}
	c := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	return c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != srv.Generation
}

// markReady records a finished generation.
func markReady(srv *mcpv1alpha1.MCPServer, message string) {
	setCondition(srv, mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonToolsDiscovered, message)
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionStalled)
	srv.Status.ObservedGeneration = srv.Generation
}

// markFailed records an attempt that failed for a reason retrying may
// fix (the server did not answer as it should, a Secret it names is
// missing). The attempt is over, so it is recorded as markStalled does:
// kstatus, and with it Flux and the cli-utils appliers, read Failed with
// the reason instead of in progress for as long as the failure lasts.
// The controller keeps retrying, and the attempt that succeeds takes it
// all back (markReady). The last good tools stay in status.
func markFailed(srv *mcpv1alpha1.MCPServer, reason, message string) {
	markStalled(srv, reason, keepingTools(srv, message))
}

// markWaiting records a workload that does not serve (yet). Its
// Deployment and pods are watched, and a rollout that does not come up
// stalls at the Deployment's progress deadline (markRolloutStalled);
// until then the generation is still under way, so what Reconciling and
// observedGeneration say stays as it is.
func markWaiting(srv *mcpv1alpha1.MCPServer, reason, message string) {
	setCondition(srv, mcpv1alpha1.ConditionReady, metav1.ConditionFalse, reason, keepingTools(srv, message))
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionStalled)
}

// keepingTools adds to a failure's message that status still holds the
// tools of the last successful discovery.
func keepingTools(srv *mcpv1alpha1.MCPServer, message string) string {
	if len(srv.Status.Tools) == 0 {
		return message
	}
	return message + fmt.Sprintf(". Status keeps the %d tools of the last successful discovery", len(srv.Status.Tools))
}

// markStalled records a generation that cannot finish as things stand:
// Stalled and Ready say why, and the generation counts as handled
// (observedGeneration, no Reconciling), so kstatus reads Failed. Stalled
// is not terminal; whether the controller tries again, and when, is
// failed's choice.
func markStalled(srv *mcpv1alpha1.MCPServer, reason, message string) {
	setCondition(srv, mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, reason, message)
	setCondition(srv, mcpv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionReconciling)
	srv.Status.ObservedGeneration = srv.Generation
}

// markWarnings says which tools carry warnings.
func markWarnings(srv *mcpv1alpha1.MCPServer) {
	var flagged []string
	for _, t := range srv.Status.Tools {
		if len(t.Warnings) > 0 {
			flagged = append(flagged, t.Name)
		}
	}
	if len(flagged) == 0 {
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionToolWarnings)
		return
	}
	setCondition(srv, mcpv1alpha1.ConditionToolWarnings, metav1.ConditionTrue, mcpv1alpha1.ReasonUntrustedText,
		fmt.Sprintf("%d tools have warnings in status.tools[].warnings: %s", len(flagged), abbreviate(flagged, 10)))
}

// markTruncated says whether every tool made it into status.
func markTruncated(srv *mcpv1alpha1.MCPServer, reason, message string) {
	if reason == "" {
		meta.RemoveStatusCondition(&srv.Status.Conditions, mcpv1alpha1.ConditionToolsTruncated)
		return
	}
	setCondition(srv, mcpv1alpha1.ConditionToolsTruncated, metav1.ConditionTrue, reason, message)
}
