package fileadapter

// RootError says which configured root New could not use, so a caller can
// name it (initialize's roots[i]) without reading the message. It wraps the
// cause: errors.Is(err, fs.ErrNotExist), fs.ErrPermission, fs.ErrInvalid (not
// a directory).
type RootError struct {
	Index int    // position in Config.Roots
	Root  string // as configured
	Err   error  // the cause; its message names the root
}

func (e *RootError) Error() string { return e.Err.Error() }
func (e *RootError) Unwrap() error { return e.Err }
