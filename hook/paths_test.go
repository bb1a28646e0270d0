//go:build unix

package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	a, b := Name("claude-code", "s1"), Name("codex", "s1")
	if a == b || a != Name("claude-code", "s1") || len(a) != 32 {
		t.Fatalf("names %q %q", a, b)
	}
	// Whatever the session id holds, the path stays in the directory.
	for _, id := range []string{"../../etc/passwd", "a/b", "\x00", strings.Repeat("x", 4096)} {
		p := SocketPath("/run/user/1/concord", "claude-code", id)
		if filepath.Dir(p) != "/run/user/1/concord" || len(p) > 104 {
			t.Errorf("session %q: socket %q", id, p)
		}
	}
}

func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := mk("private", 0o700)
	link := filepath.Join(base, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir, err string
	}{
		{private, ""},
		{mk("group", 0o750), "not 0700"},
		{mk("world", 0o707), "not 0700"},
		{link, "is a symlink"},
		{file, "not a directory"},
		{filepath.Join(base, "missing"), "no such file"},
	}
	for _, tt := range tests {
		err := CheckDir(tt.dir)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %v, want %q", filepath.Base(tt.dir), err, tt.err)
		}
	}
}

// TestDir: XDG_RUNTIME_DIR/concord when set, else <temp>/concord-<uid>;
// created 0700.
func TestDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	d, err := Dir()
	if err != nil || d != filepath.Join(xdg, "concord") {
		t.Fatalf("%q %v", d, err)
	}
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	d, err = Dir()
	if err != nil || !strings.HasPrefix(d, filepath.Join(tmp, "concord-")) {
		t.Fatalf("%q %v", d, err)
	}
	if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%v %v", fi.Mode(), err)
	}
}
