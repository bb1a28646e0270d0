package recognize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/queryadapter"
	"github.com/concord-ctx/concord/recognize"
)

// TestQueriesRerun: every query source the corpus yields is accepted by
// the allowlist, and re-running it in its workspace (the server's query
// adapter: real programs, no shell) gives exactly the text registered, so
// a block starts valid and moves only when the files do.
func TestQueriesRerun(t *testing.T) {
	n := 0
	for _, file := range corpora(t) {
		c := loadCorpus(t, file)
		ws := workspace(t, c)
		qa, err := queryadapter.New(queryadapter.Config{Confine: func(p string) (string, error) {
			r, err := filepath.EvalSymlinks(p)
			if err != nil {
				return "", err
			}
			if r != ws && !strings.HasPrefix(r, ws+"/") {
				return "", fmt.Errorf("%s outside %s", r, ws)
			}
			return r, nil
		}}, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range c.Cases {
			var call recognize.Call
			if err := json.Unmarshal([]byte(strings.ReplaceAll(string(cs.Call), "{WS}", ws)), &call); err != nil {
				t.Fatal(err)
			}
			res, err := recognize.Recognize(context.Background(), call, recognize.OS{})
			if err != nil || res.Kind != recognize.KindQuery {
				continue
			}
			n++
			if len(res.Parts) != 1 {
				t.Errorf("%s: a query with %d parts", cs.Name, len(res.Parts))
				continue
			}
			p := res.Parts[0]
			if !strings.HasPrefix(p.URI, query.Scheme+":///") {
				t.Errorf("%s: uri %q", cs.Name, p.URI)
				continue
			}
			id, err := qa.Normalize(p.URI)
			if err != nil {
				t.Errorf("%s: %v", cs.Name, err)
				continue
			}
			got, err := qa.Read(context.Background(), id)
			if err != nil {
				t.Errorf("%s: read: %v", cs.Name, err)
				continue
			}
			if got.Text != p.Text {
				t.Errorf("%s: the re-run gives\n%q\nregistered\n%q", cs.Name, got.Text, p.Text)
			}
		}
		qa.Close()
	}
	if n == 0 {
		t.Fatal("no query source in the corpus")
	}
	t.Logf("%d query sources re-run", n)
}
