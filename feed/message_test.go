package feed

import (
	"errors"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	valid := `{"v":1,"workspace":"repo","origin":"o1","host":"hostA","agent":"main","path":"src/app.py","version":"sha256:ab","time":"2026-12-03T21:00:00.123Z"}`
	tests := []struct {
		name string
		in   string
		want string // "" = valid; else a word of the error
	}{
		{"file", valid, ""},
		{"keyed", `{"v":1,"workspace":"repo","origin":"o1","host":"hostA","uri":"res://db/users/42","version":"v9"}`, ""},
		{"unknown fields are ignored", `{"v":1,"workspace":"w","origin":"o","host":"h","uri":"res://x","later":{"a":1}}`, ""},
		{"not json", `hello`, "invalid character"},
		{"empty", ``, "EOF"},
		{"trailing data", valid + `{}`, "trailing"},
		{"other version", strings.Replace(valid, `"v":1`, `"v":2`, 1), "version 2"},
		{"no version field", `{"workspace":"w","origin":"o","host":"h","uri":"res://x"}`, "version 0"},
		{"no workspace", `{"v":1,"origin":"o","host":"h","uri":"res://x"}`, "workspace missing"},
		{"no origin", `{"v":1,"workspace":"w","host":"h","uri":"res://x"}`, "origin missing"},
		{"no host", `{"v":1,"workspace":"w","origin":"o","uri":"res://x"}`, "host missing"},
		{"neither path nor uri", `{"v":1,"workspace":"w","origin":"o","host":"h"}`, "exactly one"},
		{"both path and uri", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"a","uri":"res://x"}`, "exactly one"},
		{"absolute path", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"/etc/passwd"}`, "absolute"},
		{"path leaves the root", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"../x"}`, "leaves the root"},
		{"unclean path", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"a/../../x"}`, "not clean"},
		{"dot path", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"."}`, "not clean"},
		{"backslash path", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"a\\b"}`, "backslash"},
		{"file uri", `{"v":1,"workspace":"w","origin":"o","host":"h","uri":"file:///etc/passwd"}`, "by path"},
		{"uri without scheme", `{"v":1,"workspace":"w","origin":"o","host":"h","uri":"db/users"}`, "no scheme"},
		{"control character in host", `{"v":1,"workspace":"w","origin":"o","host":"h\u001b[31m","uri":"res://x"}`, "control"},
		{"NUL in path", `{"v":1,"workspace":"w","origin":"o","host":"h","path":"a\u0000b"}`, "control"},
		{"overlong version", `{"v":1,"workspace":"w","origin":"o","host":"h","uri":"res://x","version":"` + strings.Repeat("v", 2000) + `"}`, "longer"},
		{"bad time", `{"v":1,"workspace":"w","origin":"o","host":"h","uri":"res://x","time":"yesterday"}`, "time"},
		{"too large", `{"v":1,"workspace":"w","origin":"o","host":"h","uri":"res://x","pad":"` + strings.Repeat("x", MaxMessage) + `"}`, "limit"},
		{"wrong type", `{"v":"1","workspace":"w","origin":"o","host":"h","uri":"res://x"}`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.in))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if m.Workspace == "" || m.Path+m.URI == "" {
					t.Fatalf("Decode lost fields: %+v", m)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%.60q) = %v, want ErrMalformed mentioning %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	tests := []Message{
		{Workspace: "repo", Origin: "o1", Host: "hostA", Agent: "main", Path: "src/a b.py", Version: "sha256:00"},
		{Workspace: "repo", Origin: "o1", Host: "hostA", URI: "res://db/users/42", Version: "v9", Time: "2026-12-03T21:00:00Z"},
		{Workspace: "repo", Origin: "o1", Host: "hostA", Path: "deleted.txt"}, // no version: receivers re-read
	}
	for _, m := range tests {
		data, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", m, err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("Decode(%s): %v", data, err)
		}
		m.V = Version
		if got != m {
			t.Fatalf("round trip: got %+v, want %+v", got, m)
		}
	}
	if _, err := Encode(Message{Workspace: "w", Origin: "o", Host: "h", Path: "../up"}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Encode of a path leaving the root: %v, want ErrMalformed", err)
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{"repo": true, "my_repo-2": true, "": false, "a.b": false, "a*": false, "a>": false,
		"with space": false, strings.Repeat("x", 65): false, strings.Repeat("x", 64): true, "é": false, "A_Z-09": true} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestCheckURI: a keyed source's uri is a scheme (a letter, then letters,
// digits, '+', '-', '.'), a colon and at least one more character; not file.
func TestCheckURI(t *testing.T) {
	for u, want := range map[string]string{"res://db/1": "", "a+b.c-d:x": "", "R:x": "", "res:": "no scheme", ":x": "no scheme",
		"1a:x": "no scheme", "a_b:x": "no scheme", "db/users": "no scheme", "file:///a": "a file goes by path, relative to the workspace root",
		"FILE:x": "a file goes by path, relative to the workspace root", "res:\nx": "has a control character"} {
		got := ""
		if err := checkURI(u); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("checkURI(%q) = %q, want %q", u, got, want)
		}
	}
}

// FuzzDecode: any bytes either decode to a message that passes the checks
// and encodes back to an equal one, or fail with ErrMalformed; never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"workspace":"repo","origin":"o1","host":"hostA","agent":"main","path":"src/app.py","version":"sha256:ab"}`,
		`{"v":1,"workspace":"repo","origin":"o1","host":"hostA","uri":"res://db/users/42","version":"v9","time":"2026-12-03T21:00:00Z"}`,
		`{"v":1,"workspace":"w","origin":"o","host":"h","path":"../x"}`,
		`{"v":1,"workspace":"w","origin":"o","host":"h","uri":"ab:c"}`,
		`not json`, `{}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v is not ErrMalformed", err)
			}
			return
		}
		if m.Path != "" && (strings.HasPrefix(m.Path, "/") || m.Path == ".." || strings.HasPrefix(m.Path, "../")) {
			t.Fatalf("Decode accepted a path outside the root: %q", m.Path)
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode of a decoded message: %v", err)
		}
		m2, err := Decode(again)
		if err != nil || m2 != m {
			t.Fatalf("re-decode: %+v, %v; want %+v", m2, err, m)
		}
	})
}
