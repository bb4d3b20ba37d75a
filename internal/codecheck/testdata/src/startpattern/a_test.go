package startpattern

import "regexp"

// A test's patterns compile in the test binary only.
var testPattern = regexp.MustCompile(`t`)
