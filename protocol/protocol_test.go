package protocol

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestErrorMessage: the Go error of a JSON-RPC error names the code, and
// the data when there is some.
func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Code: CodeUnknownBlock, Message: "release: unknown block"}, "concord error -32012: release: unknown block"},
		{Error{Code: CodeInvalidParams, Message: "invalid params: agent: required", Data: json.RawMessage(`{"field":"agent"}`)},
			`concord error -32602: invalid params: agent: required (data {"field":"agent"})`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestValidateObservation: the rules of observe's params that JSON types
// cannot express, each error naming the wire field. (Wrong JSON types are
// the decoder's: rpc/decode_test.go.)
func TestValidateObservation(t *testing.T) {
	src := `"uri":"file:///r/a.go","text":"x"`
	tests := []struct {
		name   string
		params string
		field  string // "" = valid
	}{
		{"valid", `{"agent":"main","sources":[{` + src + `}]}`, ""},
		{"valid event without sources", `{"agent":"main","kind":"event"}`, ""},
		{"empty params", `{}`, "agent"},
		{"missing agent", `{"sources":[{` + src + `}]}`, "agent"},
		{"negative turn", `{"agent":"a","turn":-1,"sources":[{` + src + `}]}`, "turn"},
		{"no sources", `{"agent":"a"}`, "sources"},
		{"second uri missing", `{"agent":"a","sources":[{` + src + `},{"text":""}]}`, "sources[1].uri"},
		{"relative uri", `{"agent":"a","sources":[{"uri":"a.go","text":""}]}`, "sources[0].uri"},
		{"plain path", `{"agent":"a","sources":[{"uri":"/r/a.go","text":""}]}`, "sources[0].uri"},
		{"event source checked too", `{"agent":"a","kind":"event","sources":[{"uri":"a.go"}]}`, "sources[0].uri"},
		{"range zero start", `{"agent":"a","sources":[{` + src + `,"range":{"start":0,"end":2}}]}`, "sources[0].range.start"},
		{"range end absent", `{"agent":"a","sources":[{` + src + `,"range":{"start":2}}]}`, "sources[0].range.end"},
		{"range inverted", `{"agent":"a","sources":[{` + src + `,"range":{"start":5,"end":2}}]}`, "sources[0].range.end"},
		{"bad kind", `{"agent":"a","kind":"read","sources":[{` + src + `}]}`, "kind"},
		{"bad policy action", `{"agent":"a","policy":{"local":"explode"},"sources":[{` + src + `}]}`, "policy.local"},
		{"negative policy age", `{"agent":"a","policy":{"maxAgeTurns":-1},"sources":[{` + src + `}]}`, "policy.maxAgeTurns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o ObserveParams
			if err := json.Unmarshal([]byte(tt.params), &o); err != nil {
				t.Fatal(err)
			}
			checkField(t, o.Validate(), tt.field)
		})
	}
}

// TestValidateInitialize: every option of initialize is checked by one
// method, each error naming the wire field.
func TestValidateInitialize(t *testing.T) {
	tests := []struct {
		name   string
		params string
		field  string // "" = valid
	}{
		{"minimal", `{"protocolVersion":1,"roots":[]}`, ""},
		{"every option", `{"protocolVersion":1,"roots":["/r"],"watch":"poll","placement":"tail",
			"cache":{"ttlSeconds":60,"price":{"write":1.25,"read":0.1}},
			"policy":{"global":{"local":"patch"},"byType":{"res":{"drift":"refresh","maxAgeTurns":3}}},
			"locator":{"minSimilarity":0.5,"contextLines":0},"feed":{"url":"nats://h:4222","name":"w"}}`, ""},
		{"no version", `{"roots":[]}`, "protocolVersion"},
		{"no roots", `{"protocolVersion":1}`, "roots"},
		{"relative root", `{"protocolVersion":1,"roots":["/r","r"]}`, "roots[1]"},
		{"bad watch", `{"protocolVersion":1,"roots":[],"watch":"inotify"}`, "watch"},
		{"bad placement", `{"protocolVersion":1,"roots":[],"placement":"end"}`, "placement"},
		{"ttl zero", `{"protocolVersion":1,"roots":[],"cache":{"ttlSeconds":0}}`, "cache.ttlSeconds"},
		{"ttl negative", `{"protocolVersion":1,"roots":[],"cache":{"ttlSeconds":-1}}`, "cache.ttlSeconds"},
		{"price write zero", `{"protocolVersion":1,"roots":[],"cache":{"price":{"write":0,"read":0}}}`, "cache.price"},
		{"price read negative", `{"protocolVersion":1,"roots":[],"cache":{"price":{"write":1,"read":-0.1}}}`, "cache.price"},
		{"price read over write", `{"protocolVersion":1,"roots":[],"cache":{"price":{"write":0.5,"read":1}}}`, "cache.price"},
		{"price equal", `{"protocolVersion":1,"roots":[],"cache":{"price":{"write":1,"read":1}}}`, ""},
		{"global action", `{"protocolVersion":1,"roots":[],"policy":{"global":{"local":"explode"}}}`, "policy.global.local"},
		{"byType age", `{"protocolVersion":1,"roots":[],"policy":{"byType":{"res":{"maxAgeTurns":-1}}}}`, "policy.byType.res.maxAgeTurns"},
		{"bySource first key", `{"protocolVersion":1,"roots":[],"policy":{"bySource":{"b://x":{"drift":"no"},"a://x":{"local":"no"}}}}`, "policy.bySource.a://x.local"},
		{"similarity", `{"protocolVersion":1,"roots":[],"locator":{"minSimilarity":1.5}}`, "locator.minSimilarity"},
		{"ratio", `{"protocolVersion":1,"roots":[],"locator":{"substitutionRatio":-0.1}}`, "locator.substitutionRatio"},
		{"substitutions", `{"protocolVersion":1,"roots":[],"locator":{"minSubstitutions":-1}}`, "locator.minSubstitutions"},
		{"context", `{"protocolVersion":1,"roots":[],"locator":{"contextLines":-1}}`, "locator.contextLines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p InitializeParams
			if err := json.Unmarshal([]byte(tt.params), &p); err != nil {
				t.Fatal(err)
			}
			checkField(t, p.Validate(), tt.field)
		})
	}
}

// TestCachePriceForms: cache.price as {write, read} or as a string (a
// preset in any case, or "WRITE,READ"); a string naming no price, or a price
// out of range, fails Validate naming cache.price and saying why (the
// bindings pass their option through and warn with this reason).
func TestCachePriceForms(t *testing.T) {
	for _, tc := range []struct {
		price string // the JSON of cache.price
		want  CachePrice
		why   string // "" = valid
	}{
		{`"anthropic"`, CachePrice{Write: 1.25, Read: 0.1}, ""},
		{`" Anthropic "`, CachePrice{Write: 1.25, Read: 0.1}, ""},
		{`"OPENAI"`, CachePrice{Write: 1, Read: 0.5}, ""},
		{`"1.25,0.1"`, CachePrice{Write: 1.25, Read: 0.1}, ""},
		{`" 2 , 0 "`, CachePrice{Write: 2, Read: 0}, ""},
		{`"1,1"`, CachePrice{Write: 1, Read: 1}, ""},
		{`{"write":1,"read":0}`, CachePrice{Write: 1, Read: 0}, ""},
		{`"cheap"`, CachePrice{}, `"cheap" is not anthropic, openai or "WRITE,READ"`},
		{`"1.25"`, CachePrice{}, "is not anthropic"},
		{`"1,2,3"`, CachePrice{}, "is not anthropic"},
		{`""`, CachePrice{}, "is not anthropic"},
		{`"a,b"`, CachePrice{}, `"a,b": WRITE,READ must be two numbers`},
		{`"0.5,1"`, CachePrice{}, "must have write > 0 and 0 <= read <= write (multiples of the input price), not write 0.5, read 1"},
		{`"0,0"`, CachePrice{}, "must have write > 0"},
		{`"1,-0.1"`, CachePrice{}, "0 <= read"},
		{`"nan,0"`, CachePrice{}, "must have write > 0"},
		{`"inf,1"`, CachePrice{}, "must have write > 0"},
		{`"1,nan"`, CachePrice{}, "0 <= read"},
		{`1.25`, CachePrice{}, `must be "anthropic", "openai", "WRITE,READ" or {write, read}, not 1.25`},
		{`{"write":"1.25","read":0.1}`, CachePrice{}, "or {write, read}, not {"},
		{`[1.25,0.1]`, CachePrice{}, "or {write, read}, not [1.25,0.1]"},
	} {
		t.Run(tc.price, func(t *testing.T) {
			var p InitializeParams
			if err := json.Unmarshal([]byte(`{"protocolVersion":1,"roots":[],"cache":{"price":`+tc.price+`}}`), &p); err != nil {
				t.Fatal(err)
			}
			err := p.Validate()
			if tc.why == "" {
				checkField(t, err, "")
				if got := *p.Cache.Price; got != tc.want {
					t.Fatalf("price = %+v, want %+v", got, tc.want)
				}
				return
			}
			checkField(t, err, "cache.price")
			if !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("err = %v, want it to say %q", err, tc.why)
			}
		})
	}
}

// FuzzCachePrice: any string decodes; Validate either refuses it or leaves
// a finite price with write > 0 and 0 <= read <= write.
func FuzzCachePrice(f *testing.F) {
	for _, s := range []string{"anthropic", "openai", "1.25,0.1", " 2 , 0 ", "a,b", "inf,1", "1e400,1", ",", "0x1p2,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, _ := json.Marshal(s)
		var c CacheParams
		if err := json.Unmarshal([]byte(`{"price":`+string(raw)+`}`), &c); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if c.Validate("cache") != nil {
			return
		}
		p := *c.Price
		if !(p.Write > 0 && !math.IsInf(p.Write, 0) && p.Read >= 0 && p.Read <= p.Write) {
			t.Fatalf("%q: valid price %+v", s, p)
		}
	})
}

// TestValidateOtherParams: sync, release and sourceChanged name their field.
func TestValidateOtherParams(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"sync", (&SyncParams{Agent: "a", Turn: 2, PromptChars: 10}).Validate(), ""},
		{"sync agent", (&SyncParams{}).Validate(), "agent"},
		{"sync turn", (&SyncParams{Agent: "a", Turn: -1}).Validate(), "turn"},
		{"sync prompt", (&SyncParams{Agent: "a", PromptChars: -1}).Validate(), "promptChars"},
		{"release", (&ReleaseParams{Blocks: []string{"b1"}}).Validate(), ""},
		{"release nothing", (&ReleaseParams{}).Validate(), "blocks"},
		{"release anchors", (&ReleaseParams{Anchors: []string{"x"}}).Validate(), "agent"},
		{"change", (&SourceChangedParams{URI: "res://db/1"}).Validate(), ""},
		{"change uri", (&SourceChangedParams{}).Validate(), "uri"},
		{"change path", (&SourceChangedParams{URI: "/r/a.go"}).Validate(), "uri"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkField(t, tc.err, tc.field) })
	}
}

// TestCacheTTL: seconds as a duration; 0 when left out (the server's default).
func TestCacheTTL(t *testing.T) {
	sixty := 60.0
	if got := (&CacheParams{TTLSeconds: &sixty}).TTL(); got != time.Minute {
		t.Errorf("TTL = %v, want 1m", got)
	}
	var none *CacheParams
	if got := none.TTL(); got != 0 {
		t.Errorf("nil TTL = %v, want 0", got)
	}
}

// TestScheme: a scheme is a letter then letters, digits, '+', '-', '.';
// lower-cased; anything else has none.
func TestScheme(t *testing.T) {
	for uri, want := range map[string]string{"file:///a": "file", "RES://x": "res", "git+ssh://h": "git+ssh",
		"/abs/path": "", "a.go": "", ":x": "", "1a://x": "", "c:\\x": "c"} {
		if got := Scheme(uri); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", uri, got, want)
		}
	}
}

// checkField: err is nil when field is "", else a *FieldError naming field
// that is ErrInvalidParams.
func checkField(t *testing.T, err error, field string) {
	t.Helper()
	var fe *FieldError
	switch {
	case field == "" && err != nil:
		t.Fatalf("unexpected error %v", err)
	case field == "":
	case !errors.As(err, &fe) || !errors.Is(err, ErrInvalidParams):
		t.Fatalf("err = %v, want a field error naming %q", err, field)
	case fe.Field != field:
		t.Fatalf("field = %q (%v), want %q", fe.Field, err, field)
	}
}
