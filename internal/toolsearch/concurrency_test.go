package toolsearch

import (
	"slices"
	"sync"
	"testing"
)

// TestConcurrentSearchAndBuild searches one index from many goroutines
// while others build new indexes from the same documents and search those:
// every answer must equal the one computed alone, which holds only if
// searches share no mutable state and builds touch nothing an index reads.
// Run with -race.
func TestConcurrentSearchAndBuild(t *testing.T) {
	c := loadCorpus(t)
	queries := loadQueries(t)
	ix := Build(c.docs)
	want := make([][]Hit, len(queries))
	for i, q := range queries {
		want[i] = ix.Search(q.Query, 10)
	}

	const searchers, builders, rounds = 8, 2, 3
	var wg sync.WaitGroup
	errs := make(chan string, searchers+builders)
	for g := 0; g < searchers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for i := range queries {
					// Each goroutine walks the queries from its own offset, so
					// different queries run at the same moment.
					i = (i + g*len(queries)/searchers) % len(queries)
					if got := ix.Search(queries[i].Query, 10); !slices.Equal(got, want[i]) {
						errs <- "shared index: " + queries[i].Query
						return
					}
				}
			}
		}(g)
	}
	for b := 0; b < builders; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				fresh := Build(c.docs)
				for i, q := range queries {
					if got := fresh.Search(q.Query, 10); !slices.Equal(got, want[i]) {
						errs <- "fresh index: " + q.Query
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("an answer under concurrency differed from the answer alone (%s)", e)
	}
}
