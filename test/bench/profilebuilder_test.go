package bench

import "testing"

// TestProfileBuilder checks that perf's sample blocks become samples with
// their stacks, innermost frame first, and the period as CPU time.
func TestProfileBuilder(t *testing.T) {
	b := newProfileBuilder(&goSymbols{}, "manager")
	for _, line := range []string{
		"   2004008 ",
		"\t          a3b65 crypto/sha256.block (/usr/bin/other)",
		"\t          a0e85 main.main (/usr/bin/other)",
		"",
		"   2004008 ",
		"\tffffffff8100 do_syscall_64 ([kernel.kallsyms])",
		"\t          a0e85 main.main (/usr/bin/other)",
		"",
	} {
		b.line(line)
	}
	b.flush()
	if len(b.p.Sample) != 2 {
		t.Fatalf("%d samples, want 2", len(b.p.Sample))
	}
	first := b.p.Sample[0]
	if got := first.Location[0].Line[0].Function.Name; got != "crypto/sha256.block" {
		t.Errorf("innermost frame %q, want crypto/sha256.block", got)
	}
	if got := first.Value[1]; got != 2004008 {
		t.Errorf("CPU %d ns, want 2004008", got)
	}
	if first.Location[1] != b.p.Sample[1].Location[1] {
		t.Error("the same frame of two samples is two locations")
	}
	if got := b.p.Sample[1].Location[0].Line[0].Function.Filename; got != "[kernel.kallsyms]" {
		t.Errorf("kernel frame's file %q, want [kernel.kallsyms]", got)
	}
}
