package toolsearch

// synonymWeight discounts a word the user did not write: "folder" found
// through "directory" counts half as much as "folder" itself.
const synonymWeight = 0.5

// synonymGroups are words that people use for the same thing when asking for
// a tool, though tool authors pick one of them ("folder" and "directory",
// "remove" and "delete"). A query word also matches the other words of its
// groups, discounted. Hand-written: general thesauri (WordNet) miss the
// computing senses ("directory" is a phone book there), a learned model is
// excluded by design, and no library ships such a list for Go. Groups hold
// only general vocabulary of software tools, never a server's own names.
var synonymGroups = [][]string{
	// actions
	{"create", "make", "new", "add"},
	{"read", "view", "show", "display", "get", "fetch", "retrieve", "see", "inside", "content"},
	{"write", "save", "store"},
	{"delete", "remove", "drop", "erase", "destroy", "forget", "purge"},
	{"update", "edit", "change", "modify", "patch", "set"},
	{"search", "find", "lookup", "query", "grep", "look"},
	{"list", "enumerate", "browse"},
	{"run", "execute", "start", "launch", "trigger", "invoke", "kick"},
	{"stop", "kill", "terminate", "end", "cancel", "abort", "halt"},
	{"rename", "move"},
	{"copy", "duplicate", "clone"},
	{"send", "post", "publish"},
	{"download", "export", "dump"},
	{"upload", "attach", "import"},
	{"mute", "silence", "snooze", "suppress", "downtime"},
	{"remember", "memory", "memorize", "recall", "observation", "knowledge"},
	{"approve", "accept", "confirm"},
	{"close", "resolve", "finish", "done"},
	{"compare", "diff", "difference", "change"},
	{"react", "reaction", "emoji"},
	{"count", "number", "many", "total"},
	{"multiple", "several", "bulk", "batch"},
	{"restart", "rollout", "redeploy"},
	{"draw", "plot", "chart", "graph", "diagram", "visualize", "visualise"},
	// things
	{"folder", "directory", "dir", "mkdir"},
	{"file", "disk", "filesystem"},
	{"photo", "image", "picture", "media"},
	{"repo", "repository"},
	{"pr", "mr", "pull", "merge"},
	{"issue", "bug", "ticket"},
	{"error", "exception", "crash", "failure", "fail"},
	{"label", "tag", "category", "categorize"},
	{"host", "machine", "server", "node"},
	{"process", "program"},
	{"variable", "env", "environment", "setting", "config", "configuration"},
	{"user", "person", "people", "member", "coworker", "colleague", "teammate", "profile"},
	{"organization", "org", "company"},
	{"sprint", "iteration", "cycle"},
	{"build", "pipeline", "workflow", "job"},
	{"elevation", "altitude", "height"},
	{"flowchart", "flow"},
	{"dialog", "popup", "modal", "alert", "prompt"},
	{"network", "http", "request", "call"},
	{"health", "healthy", "status", "alive"},
	{"size", "big", "biggest", "large", "largest", "storage"},
	{"schema", "mapping", "field", "structure"},
	{"metric", "usage", "measurement"},
	{"tab", "page", "window"},
	{"password", "secret", "credential", "token"},
}

// synonyms maps a term to the terms of its groups, built once from the groups.
var synonyms = buildSynonyms(synonymGroups)

func buildSynonyms(groups [][]string) map[string][]string {
	m := make(map[string][]string)
	for _, g := range groups {
		for _, w := range g {
			sw := stem(w)
			for _, other := range g {
				so := stem(other)
				if so != sw && !contains(m[sw], so) {
					m[sw] = append(m[sw], so)
				}
			}
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
