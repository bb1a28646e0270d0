package audit

import "io"

// WriteHTML writes the report as one self-contained page.
func (r *Report) WriteHTML(w io.Writer) error { return nil }
