package menu

// A menu is resolved again on every change of any server, and the
// global one holds every tool of the cluster: 100,000 at the size issue 17
// sets. Its entries arrive nearly in order (servers in namespace and name
// order, each server's tools sorted by exposed name in its status, and
// exposed names begin with the server's prefix, by default its name), so
// they are a few ascending runs, often one. Merging those runs costs
// O(n log runs), where sorting from scratch cost O(n log n): in the scale
// benchmark's profile of 500 servers joining 5,000, that sort was 40% of
// the catalog's menu builds, themselves half of the manager's CPU.

// sortedByName returns entries sorted by name, keeping the order of
// entries of one name, by merging the ascending runs they arrive in: the
// runs of positions are merged, and the entries (which hold pointers, so
// the collector is told of every move) are moved once. Entries already
// in order are returned as they are; otherwise entries' array is left to
// the collector.
func sortedByName(entries []Entry) []Entry {
	starts := runStarts(entries)
	if len(starts) <= 1 {
		return entries
	}
	n := int32(len(entries))
	src, dst := make([]int32, n), make([]int32, n)
	for i := range src {
		src[i] = int32(i)
	}
	for len(starts) > 1 {
		next := make([]int32, 0, (len(starts)+1)/2)
		for k := 0; k < len(starts); k += 2 {
			lo, mid, hi := starts[k], n, n
			if k+1 < len(starts) {
				mid = starts[k+1]
			}
			if k+2 < len(starts) {
				hi = starts[k+2]
			}
			mergeByName(entries, dst[lo:hi], src[lo:mid], src[mid:hi])
			next = append(next, lo)
		}
		starts = next
		src, dst = dst, src
	}
	sorted := make([]Entry, n, cap(entries))
	for k, i := range src {
		sorted[k] = entries[i]
	}
	return sorted
}

// runStarts are the indexes where an ascending run of names begins.
func runStarts(entries []Entry) []int32 {
	if len(entries) == 0 {
		return nil
	}
	starts := []int32{0}
	for i := 1; i < len(entries); i++ {
		if entries[i].Name < entries[i-1].Name {
			starts = append(starts, int32(i))
		}
	}
	return starts
}

// mergeByName merges the positions a and b, each in name order of
// entries, into dst, a's first among equal names.
func mergeByName(entries []Entry, dst, a, b []int32) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if entries[b[j]].Name < entries[a[i]].Name {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// firstClaims keeps the first entry of each name of entries sorted by
// name (the winner: entries of one name are in the order they were
// claimed) and lists the names claimed more than once, in name order,
// with every claimant. It reuses entries' array.
func firstClaims(entries []Entry) (kept []Entry, conflicts []Conflict) {
	kept = entries[:0]
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].Name == entries[i].Name {
			j++
		}
		if j-i > 1 {
			owners := make([]string, 0, j-i)
			for _, e := range entries[i:j] {
				owners = append(owners, e.Namespace+"/"+e.Server)
			}
			conflicts = append(conflicts, Conflict{Name: entries[i].Name, Servers: owners})
		}
		kept = append(kept, entries[i])
		i = j
	}
	// The entries past the kept ones point into MCPServers; let them go.
	clear(entries[len(kept):])
	return kept, conflicts
}
