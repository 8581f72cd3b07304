package toolcatalog

import (
	"testing"
	"time"
)

// TestSyncWait: a sync follows a burst of changes after syncBurst; while
// syncs are slow (the largest menus rebuilt) and changes keep coming, it
// starts syncSpacing times the last one's length after it ended, so that
// syncs back to back take at most a quarter of a core, and never more
// than maxSyncSpacing after it.
func TestSyncWait(t *testing.T) {
	for _, tc := range []struct {
		name        string
		took, since time.Duration
		want        time.Duration
	}{
		{name: "the first sync", took: 0, since: time.Hour, want: 50 * time.Millisecond},
		{name: "a quick sync just ended", took: 10 * time.Millisecond, since: 0, want: 50 * time.Millisecond},
		{name: "at the burst's length", took: 16 * time.Millisecond, since: 0, want: 50 * time.Millisecond},
		{name: "just past it", took: 17 * time.Millisecond, since: 0, want: 51 * time.Millisecond},
		{name: "a slow sync just ended", took: 60 * time.Millisecond, since: 0, want: 180 * time.Millisecond},
		{name: "a slow sync ended a while ago", took: 60 * time.Millisecond, since: 100 * time.Millisecond, want: 80 * time.Millisecond},
		{name: "a slow sync after a quiet spell", took: 60 * time.Millisecond, since: time.Minute, want: 50 * time.Millisecond},
		{name: "a sync that waited long on a build", took: time.Minute, since: 0, want: 2 * time.Second},
	} {
		got := syncWait(tc.took, tc.since)
		if got != tc.want {
			t.Errorf("%s: syncWait(%s, %s) = %s, want %s", tc.name, tc.took, tc.since, got, tc.want)
		}
		if tc.took <= maxSyncSpacing/syncSpacing {
			if share := float64(tc.took) / float64(tc.took+tc.since+got); share > 0.25 {
				t.Errorf("%s: syncs would take %.0f%% of a core", tc.name, 100*share)
			}
		}
	}
}
