package toolsearch

// builder turns documents into terms. It lives for one Build: its maps are
// never shared with an Index's readers except terms, which is frozen after.
type builder struct {
	terms map[string]int32 // stem → term id
	words map[string]int32 // folded word → term id, or -1 for a stop word
	seen  map[int32]int    // term → position in the current document's list
	buf   []string
}

func newBuilder(numDocs int) *builder {
	return &builder{
		terms: make(map[string]int32),
		words: make(map[string]int32),
		seen:  make(map[int32]int),
	}
}

// document returns the terms of one document and each field's length in words.
func (b *builder) document(d Document) ([]docTerm, [numFields]uint32) {
	clear(b.seen)
	var list []docTerm
	var lengths [numFields]uint32
	add := func(f field, text string) {
		b.buf = appendWords(b.buf[:0], text)
		for _, w := range b.buf {
			t := b.term(w)
			if t < 0 {
				continue
			}
			at, ok := b.seen[t]
			if !ok {
				at = len(list)
				b.seen[t] = at
				list = append(list, docTerm{term: t})
			}
			// A name's words count once: "mcp_github_get_issue" and
			// "get_issue" name the same thing twice.
			if f == fieldName && list[at].tf[f] > 0 {
				continue
			}
			if list[at].tf[f] < ^uint16(0) {
				list[at].tf[f]++
			}
			lengths[f]++
		}
	}
	add(fieldName, d.Name)
	add(fieldName, d.OriginalName)
	add(fieldTitle, d.Title)
	add(fieldDescription, d.Description)
	params := schemaTexts(d.InputSchema)
	for _, name := range params.names {
		add(fieldParamName, name)
	}
	for _, text := range params.texts {
		add(fieldParamText, text)
	}
	return list, lengths
}

// term returns the id of the term a folded word stems to, or -1 for a stop
// word. Each distinct word is stemmed once per build.
func (b *builder) term(word string) int32 {
	if t, ok := b.words[word]; ok {
		return t
	}
	t := int32(-1)
	if !isStopWord(word) {
		s := stem(word)
		var ok bool
		if t, ok = b.terms[s]; !ok {
			t = int32(len(b.terms))
			b.terms[s] = t
		}
	}
	b.words[word] = t
	return t
}
