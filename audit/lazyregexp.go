package audit

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles pattern on first use. Package-level regexps compile
// at every process start, and `concord hook` starts one per tool call
// without using any of them.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
