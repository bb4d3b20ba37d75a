package startpattern

import (
	"regexp"
	"sync"
)

var word = regexp.MustCompile(`\w+`) // want `a pattern compiled as the program starts`

var (
	digits, err = regexp.Compile(`\d+`) // want `a pattern compiled as the program starts`
	inTable     = map[string]*regexp.Regexp{
		"x": regexp.MustCompile(`x`), // want `a pattern compiled as the program starts`
	}
)

// lazy compiles at its first use: fine.
var lazy = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`y`) })

// quote is no compilation.
var quote = regexp.QuoteMeta("a.b")

func use() *regexp.Regexp {
	return regexp.MustCompile(`z`) // inside a function: at its use
}
