package toolcatalog

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A replica holds a bounded number of parked calls, and one caller's take
// no more than its share: another's questions are still asked.
func TestParkedCallsAreBoundedPerCaller(t *testing.T) {
	p := newParkedCalls()
	park := func(identity string) (*parkedCall, string) {
		pc, _ := p.start(context.Background(), identity, asksElicitForm)
		return pc, p.add(pc)
	}
	var alices []*parkedCall
	for i := range maxCallerParked {
		pc, why := park("alice")
		if why != "" {
			t.Fatalf("alice's call %d: %s", i, why)
		}
		alices = append(alices, pc)
	}
	if _, why := park("alice"); !strings.Contains(why, fmt.Sprintf("this caller has %d calls waiting", maxCallerParked)) {
		t.Errorf("alice past her most: %q", why)
	}
	if _, why := park("bob"); why != "" {
		t.Errorf("bob: %q", why)
	}
	if why := p.add(alices[0]); why != "" {
		t.Errorf("a call held already, again: %q", why)
	}
	p.remove(alices[0].id)
	if _, why := park("alice"); why != "" {
		t.Errorf("alice once one of hers ended: %q", why)
	}
	if p.byCaller["alice"] != maxCallerParked || p.byCaller["bob"] != 1 {
		t.Errorf("counts: %v", p.byCaller)
	}
}
