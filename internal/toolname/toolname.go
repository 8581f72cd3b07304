// Package toolname turns the tool names an MCP server publishes into names
// every major function-calling API accepts: mcp_{prefix}_{tool}, matching
// ^[a-zA-Z][a-zA-Z0-9_-]{0,63}$, stable across versions and unique within a
// server. It is the one place in the code that makes exposed names.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

const (
	// MaxLength is the longest name function-calling APIs accept.
	MaxLength = 64
	// hashDigits is how many hex digits of SHA-256 tell names apart.
	hashDigits = 8
	// maxHashDigits is the longest suffix used to settle a collision.
	maxHashDigits = 32
)

// Expose returns the exposed name of each tool of one server, in the order
// given. Names that would collide after sanitizing each get a suffix made
// from their original name, so no tool is dropped or overwritten.
func Expose(prefix string, tools []string) []string {
	exposed := make([]string, len(tools))
	for i, tool := range tools {
		exposed[i] = shorten(sanitize("mcp_"+prefix+"_"+tool), tool)
	}
	// Longer hashes settle the (astronomically rare) hash collisions; 32
	// digits still leave room for the name. Identical original names stay
	// identical: a server must list each name once, and ListTools keeps the
	// first.
	for digits := hashDigits; digits <= maxHashDigits; digits *= 2 {
		colliding := collisions(exposed)
		if len(colliding) == 0 {
			break
		}
		for i := range exposed {
			if colliding[exposed[i]] {
				exposed[i] = withSuffix(sanitize("mcp_"+prefix+"_"+tools[i]), tools[i], digits)
			}
		}
	}
	return exposed
}

// Prefix returns the prefix of a name Expose made from original, and false
// when the name is not mcp_{prefix}_{original} sanitized: when Expose cut
// it to fit or gave it a hash to settle a collision, or it was not made
// from original at all.
// It allocates nothing: the catalog asks it of every tool of a menu.
func Prefix(exposed, original string) (string, bool) {
	rest, ok := strings.CutPrefix(exposed, "mcp_")
	// sanitize makes one byte of each code point.
	tail := 1 + utf8.RuneCountInString(original)
	if !ok || len(rest) <= tail || rest[len(rest)-tail] != '_' {
		return "", false
	}
	at := len(rest) - tail + 1
	for _, r := range original {
		want := byte('_')
		if isAllowed(r) {
			want = byte(r)
		}
		if rest[at] != want {
			return "", false
		}
		at++
	}
	return rest[:len(rest)-tail], true
}

// Sanitize replaces every code point outside [a-zA-Z0-9_-] with one "_".
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if isAllowed(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func isAllowed(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// shorten keeps a sanitized name of MaxLength or fewer whole, and cuts a
// longer one to exactly MaxLength ending in "_" and the original's hash.
func shorten(sanitized, original string) string {
	if len(sanitized) <= MaxLength {
		return sanitized
	}
	return withSuffix(sanitized, original, hashDigits)
}

// withSuffix appends "_" and the first digits hex digits of the SHA-256 of
// the original name, cutting the sanitized name so the result fits.
func withSuffix(sanitized, original string, digits int) string {
	sum := sha256.Sum256([]byte(original))
	suffix := "_" + hex.EncodeToString(sum[:])[:digits]
	if keep := MaxLength - len(suffix); len(sanitized) > keep {
		sanitized = sanitized[:keep]
	}
	return sanitized + suffix
}

// collisions returns the names that occur more than once.
func collisions(names []string) map[string]bool {
	seen := make(map[string]int, len(names))
	for _, n := range names {
		seen[n]++
	}
	var dup map[string]bool
	for n, count := range seen {
		if count > 1 {
			if dup == nil {
				dup = map[string]bool{}
			}
			dup[n] = true
		}
	}
	return dup
}
