package audit

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// IsTerminal reports whether w is a terminal (a character device), where a
// progress bar may be drawn.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ProgressBar draws "[#####.....] done/total" on w, redrawn in place, and
// ends the line at the last input.
func ProgressBar(w io.Writer) Progress {
	const width = 30
	return func(done, total int) {
		if total == 0 {
			return
		}
		n := width * done / total
		fmt.Fprintf(w, "\r[%s%s] %d/%d sessions", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}
