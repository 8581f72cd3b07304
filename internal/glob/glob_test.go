package glob

import "testing"

func TestKeep(t *testing.T) {
	tests := []struct {
		name             string
		tool             string
		include, exclude []string
		want             bool
	}{
		{"no lists keep everything", "anything", nil, nil, true},
		{"a plain name matches itself", "echo", []string{"echo"}, nil, true},
		{"an include list keeps only matches", "write", []string{"read_*"}, nil, false},
		{"a star matches a suffix", "read_file", []string{"read_*"}, nil, true},
		{"exclude wins over include", "read_secret", []string{"read_*"}, []string{"*_secret"}, false},
		{"exclude alone drops matches", "delete_repo", nil, []string{"delete_*"}, false},
		{"character classes work", "tool7", []string{"tool[0-9]"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Keep(tt.tool, tt.include, tt.exclude); got != tt.want {
				t.Errorf("Keep(%q) = %v, want %v", tt.tool, got, tt.want)
			}
		})
	}
}

func TestFirstInvalid(t *testing.T) {
	if p, bad := FirstInvalid([]string{"ok_*"}, []string{"fine", "broken["}); !bad || p != "broken[" {
		t.Errorf("got %q, %v; want broken[", p, bad)
	}
	if _, bad := FirstInvalid([]string{"a*", "b?"}); bad {
		t.Error("valid patterns reported invalid")
	}
}

func TestKeepURI(t *testing.T) {
	tests := []struct {
		uri              string
		include, exclude []string
		want             bool
	}{
		{"file://files.tools//home/a.txt", nil, nil, true},
		{"file://files.tools//home/a.txt", []string{"file://files.tools/*"}, nil, true},
		{"file://files.tools//home/a.txt", []string{"file://other.tools/*"}, nil, false},
		{"ui://weather.tools/w/view.html", []string{"ui://*"}, nil, true},
		{"ui://weather.tools/w/view.html", []string{"*.html"}, nil, true},
		{"ui://weather.tools/w/view.html", []string{"ui://*/w/*"}, nil, true},
		{"ui://weather.tools/w/view.html", []string{"ui://*/x/*"}, nil, false},
		{"ui://weather.tools/w/view.html", []string{"ui://*"}, []string{"*/view.html"}, false},
		{"ab", []string{"a*b*"}, nil, true},
		{"ab", []string{"a*ab"}, nil, false}, // the prefix and suffix may not overlap
		{"a", []string{"a"}, nil, true},
		{"a?", []string{"a?"}, nil, true}, // only '*' is special
		{"ab", []string{"a?"}, nil, false},
		{"test://x.y/[a]", []string{"test://x.y/[a]"}, nil, true},
	}
	for _, tt := range tests {
		if got := KeepURI(tt.uri, tt.include, tt.exclude); got != tt.want {
			t.Errorf("KeepURI(%q, %q, %q) = %v, want %v", tt.uri, tt.include, tt.exclude, got, tt.want)
		}
	}
}
