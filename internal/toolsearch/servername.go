package toolsearch

// nameServerWords decides, for every word of a server's name, whether it
// names a product (see Build): when no other server's tools use it, it
// counts as a word of the names of that server's tools; otherwise it stays
// in the server field, which only a query writing the word as a name
// searches.
func nameServerWords(docs []Document, perDoc [][]docTerm, numTerms int) {
	servers := map[string]int32{}
	serverOf := make([]int32, len(docs))
	for i, d := range docs {
		id, ok := servers[d.Server]
		if !ok {
			id = int32(len(servers))
			servers[d.Server] = id
		}
		serverOf[i] = id
	}
	// Which servers' names hold each term: a few terms per server.
	type pair struct{ term, server int32 }
	owners := map[pair]bool{}
	inServerName := make([]bool, numTerms)
	for d, terms := range perDoc {
		for _, t := range terms {
			if t.tf[fieldServer] > 0 {
				owners[pair{t.term, serverOf[d]}] = true
				inServerName[t.term] = true
			}
		}
	}
	if len(owners) == 0 {
		return
	}
	common := make([]bool, numTerms)
	for d, terms := range perDoc {
		for _, t := range terms {
			if inServerName[t.term] && !common[t.term] && t.inText() && !owners[pair{t.term, serverOf[d]}] {
				common[t.term] = true
			}
		}
	}
	for _, terms := range perDoc {
		for i := range terms {
			if t := &terms[i]; t.tf[fieldServer] > 0 && !common[t.term] {
				t.tf[fieldName] = max(t.tf[fieldName], 1)
				t.tf[fieldServer] = 0
			}
		}
	}
}
