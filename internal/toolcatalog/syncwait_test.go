package toolcatalog

import (
	"testing"
	"time"
)

// TestSyncWait: a sync follows a burst of changes after syncBurst, and
// while syncs are slow (the largest menus rebuilt) waits syncSpacing
// times as long as the last one took, so that syncs back to back take
// at most a quarter of a core.
func TestSyncWait(t *testing.T) {
	for _, tc := range []struct {
		took, want time.Duration
	}{
		{took: 0, want: 50 * time.Millisecond},
		{took: 10 * time.Millisecond, want: 50 * time.Millisecond},
		{took: 16 * time.Millisecond, want: 50 * time.Millisecond},
		{took: 17 * time.Millisecond, want: 51 * time.Millisecond},
		{took: 60 * time.Millisecond, want: 180 * time.Millisecond},
		{took: time.Second, want: 3 * time.Second},
	} {
		got := syncWait(tc.took)
		if got != tc.want {
			t.Errorf("syncWait(%s) = %s, want %s", tc.took, got, tc.want)
		}
		if share := float64(tc.took) / float64(tc.took+got); share > 0.25 {
			t.Errorf("after a sync of %s, syncs would take %.0f%% of a core", tc.took, 100*share)
		}
	}
}
