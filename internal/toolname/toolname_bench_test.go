package toolname

import (
	"fmt"
	"testing"
)

func BenchmarkExpose1000(b *testing.B) {
	tools := make([]string, 1000)
	for i := range tools {
		tools[i] = fmt.Sprintf("tools.group%d/do-something météo %d", i%7, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		Expose("server", tools)
	}
}
