package recognize_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/recognize"
)

// OpenCode's edit-type tools name the files they wrote in their arguments
// and metadata (until issue 21 the TypeScript binding's changedFiles).
func TestOpenCodeWrites(t *testing.T) {
	patchText := "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: new.txt\n+x\n*** Delete File: old.txt\n*** End Patch"
	for _, tc := range []struct {
		tool       string
		args, meta string
		want       []string
	}{
		{"edit", `{"filePath":"src/a.ts"}`, `{}`, []string{"/p/src/a.ts"}},
		{"write", `{"filePath":"/abs/b.ts"}`, `{"filepath":"/abs/b.ts"}`, []string{"/abs/b.ts"}},
		{"multiedit", `{"filePath":"m.ts","edits":[]}`, `{"filediff":{"file":"/p/m.ts"}}`, []string{"/p/m.ts"}},
		{"apply_patch", `{}`, `{"files":[{"filePath":"/p/x","type":"update"},{"filePath":"/p/y","movePath":"/p/z","type":"move"}]}`,
			[]string{"/p/x", "/p/y", "/p/z"}},
		{"apply_patch", mustJSON(t, map[string]string{"patchText": patchText}), ``, []string{"/p/a.txt", "/p/new.txt", "/p/old.txt"}},
		{"patch", mustJSON(t, map[string]string{"patchText": "*** Update File: q\n*** Move to: r"}), ``, []string{"/p/q", "/p/r"}},
	} {
		call := recognize.Call{Runtime: recognize.OpenCode, Tool: tc.tool, Args: json.RawMessage(tc.args), Output: "ok", Cwd: "/p"}
		if tc.meta != "" {
			call.Metadata = json.RawMessage(tc.meta)
		}
		res, err := recognize.Recognize(context.Background(), call, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != recognize.KindWrite || strings.Join(res.Writes, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s %s: got %s %v, want writes %v", tc.tool, tc.args, res.Kind, res.Writes, tc.want)
		}
	}
	res, _ := recognize.Recognize(context.Background(), recognize.Call{Runtime: recognize.OpenCode, Tool: "edit", Args: json.RawMessage(`{}`), Cwd: "/p"}, nil)
	if res.Kind != recognize.KindEvent {
		t.Errorf("an edit naming no file: %s", res.Kind)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
