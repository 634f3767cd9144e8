// Package typo finds the name someone most likely meant: the flag, rule or
// audit id a misspelling is closest to, for errors that say "did you mean".
package typo

// Nearest is the name among names closest to s by edit distance, if it is
// close enough to be a typo of it (a third of s's length, at least 2, or
// less than that where limit says so: limit > 0 caps the distance); "" if
// none is. Of names equally close, the first wins.
func Nearest(s string, names []string, limit int) string {
	most := max(2, len(s)/3)
	if limit > 0 {
		most = min(most, limit)
	}
	best, bestD := "", most+1
	for _, n := range names {
		if d := Distance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Distance is Levenshtein's distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
