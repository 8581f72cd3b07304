package menu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// entries are named by "name@server" specs, in the order given.
func entries(specs ...string) []Entry {
	out := make([]Entry, len(specs))
	for i, spec := range specs {
		name, server, _ := strings.Cut(spec, "@")
		out[i] = Entry{Name: name, Namespace: "ns", Server: server}
	}
	return out
}

func specs(list []Entry) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Name + "@" + e.Server
	}
	return out
}

func TestSortedByName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []string
		want    []string
		inPlace bool // already in order: the same array back
	}{
		{name: "empty", in: nil, want: []string{}, inPlace: true},
		{name: "one", in: []string{"a@x"}, want: []string{"a@x"}, inPlace: true},
		{name: "in order", in: []string{"a@x", "b@x", "b@y", "c@y"}, want: []string{"a@x", "b@x", "b@y", "c@y"}, inPlace: true},
		{name: "two runs", in: []string{"c@x", "d@x", "a@y", "e@y"}, want: []string{"a@y", "c@x", "d@x", "e@y"}},
		{name: "descending", in: []string{"d@x", "c@x", "b@x", "a@x"}, want: []string{"a@x", "b@x", "c@x", "d@x"}},
		{name: "odd number of runs", in: []string{"b@x", "a@y", "c@y", "a@z"}, want: []string{"a@y", "a@z", "b@x", "c@y"}},
		{
			name: "equal names keep their order across runs",
			in:   []string{"m@first", "z@first", "a@second", "m@second", "b@third", "m@third"},
			want: []string{"a@second", "b@third", "m@first", "m@second", "m@third", "z@first"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := entries(tc.in...)
			got := sortedByName(in)
			if !slices.Equal(specs(got), tc.want) {
				t.Fatalf("sortedByName(%v) = %v, want %v", tc.in, specs(got), tc.want)
			}
			if len(in) > 0 && (&got[0] == &in[0]) != tc.inPlace {
				t.Fatalf("same array back: %t, want %t", &got[0] == &in[0], tc.inPlace)
			}
		})
	}
}

// TestSortedByNameIsAStableSort compares the merge with the standard
// library's stable sort on inputs of every shape: runs of every length,
// names repeated across them.
func TestSortedByNameIsAStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 1))
	for round := range 200 {
		n := r.IntN(300)
		in := make([]Entry, n)
		for i := range in {
			in[i] = Entry{Name: fmt.Sprintf("t%03d", r.IntN(1+n/2)), Server: fmt.Sprint(i)}
		}
		if round%2 == 0 { // a few long ascending runs, as menus arrive
			for start := 0; start < n; start += 1 + r.IntN(60) {
				end := min(n, start+1+r.IntN(60))
				slices.SortStableFunc(in[start:end], func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
			}
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
		if got := sortedByName(in); !slices.Equal(specs(got), specs(want)) {
			t.Fatalf("round %d: sortedByName = %v, want %v", round, specs(got), specs(want))
		}
	}
}

func TestFirstClaims(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        []string
		kept      []string
		conflicts []Conflict
	}{
		{name: "no names", in: nil, kept: []string{}},
		{name: "every name once", in: []string{"a@x", "b@y"}, kept: []string{"a@x", "b@y"}},
		{
			name: "the first claim wins, every claimant listed in order",
			in:   []string{"a@x", "b@y", "b@x", "b@z", "c@x", "d@z", "d@y"},
			kept: []string{"a@x", "b@y", "c@x", "d@z"},
			conflicts: []Conflict{
				{Name: "b", Servers: []string{"ns/y", "ns/x", "ns/z"}},
				{Name: "d", Servers: []string{"ns/z", "ns/y"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := entries(tc.in...)
			kept, conflicts := firstClaims(in)
			if !slices.Equal(specs(kept), tc.kept) {
				t.Fatalf("kept %v, want %v", specs(kept), tc.kept)
			}
			if fmt.Sprint(conflicts) != fmt.Sprint(tc.conflicts) {
				t.Fatalf("conflicts %v, want %v", conflicts, tc.conflicts)
			}
			// What was not kept no longer points anywhere.
			for _, e := range in[len(kept):] {
				if e != (Entry{}) {
					t.Fatalf("entry %v left past the kept ones", e)
				}
			}
		})
	}
}
