package controller

import (
	"reflect"
	"strings"
	"testing"
)

func TestReviewText(t *testing.T) {
	tests := []struct {
		name, tool, description string
		limit                   int
		wantDescription         string
		wantWarnings            []string
	}{
		{"plain text passes", "read", "Reads a file.\nSafely.", 100, "Reads a file.\nSafely.", nil},
		{"a long description is cut", "read", strings.Repeat("a", 20), 8, strings.Repeat("a", 8),
			[]string{"the description was cut from 20 to 8 bytes"}},
		{"a cut never splits a character", "read", "ééééé", 5, "éé",
			[]string{"the description was cut from 10 to 4 bytes"}},
		{"zero-width and bidi characters are reported once each", "read", "ok\u200bhidden\u202eevil\u200b", 100, "ok\u200bhidden\u202eevil\u200b",
			[]string{"the description contains invisible characters: U+200B, U+202E"}},
		{"an invisible name is reported", "re\u200dad", "fine", 100, "fine",
			[]string{"the name contains invisible characters: U+200D"}},
		{"no limit keeps everything", "read", strings.Repeat("a", 20), 0, strings.Repeat("a", 20), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			description, warnings := reviewText(tt.tool, tt.description, tt.limit)
			if description != tt.wantDescription || !reflect.DeepEqual(warnings, tt.wantWarnings) {
				t.Errorf("got %q %q, want %q %q", description, warnings, tt.wantDescription, tt.wantWarnings)
			}
		})
	}
}
