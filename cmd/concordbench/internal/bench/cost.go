package bench

import (
	"fmt"
	"sort"
	"strings"
)

// Price is a prompt-cache price model: what one prompt token costs, in
// units of the provider's plain input price, when it is read from the
// cache, written to it, or neither. docs/bench.md cites the pages.
//
// The simulation, per task (one conversation) and per model call:
//   - shared = the tokens this call's prompt has in common, from the
//     start, with the previous call's prompt (tools, messages, primer);
//   - a prompt shorter than MinPrompt is neither read nor written (plain
//     input, 1x);
//   - otherwise read = shared rounded down to the provider's granularity
//     (0 when below MinPrompt), and the remaining tokens are written
//     (Write) or, at a provider without a write premium, plain input.
//
// The cache's time to live is not modelled: the scripted agent answers at
// once, so no entry expires within a task (Anthropic's default TTL is 5
// minutes, OpenAI's at least 5). Anthropic reads a cache entry only where a
// breakpoint was written; the rule above assumes a breakpoint that ends
// every previous prompt and looks back far enough, which makes it an upper
// bound on reads after an in-place rewrite.
type Price struct {
	Name      string  `json:"name"`
	Read      float64 `json:"read"`       // multiplier of a cache read
	Write     float64 `json:"write"`      // multiplier of a cache write (1 = no premium)
	MinPrompt int     `json:"min_prompt"` // shortest cacheable prefix
	Granule   int     `json:"granule"`    // reads count in steps of this many tokens past MinPrompt
	Cached    bool    `json:"cached"`     // false: no cache at all (every token 1x)
}

// Prices are the --price models.
var Prices = map[string]Price{
	// Anthropic: a 5-minute cache write costs 1.25x the input price, a read
	// 0.1x; the minimum cacheable prompt is 1,024 tokens (Sonnet, Opus).
	"anthropic": {Name: "anthropic", Read: 0.1, Write: 1.25, MinPrompt: 1024, Granule: 1, Cached: true},
	// OpenAI: automatic caching of prompts of 1,024 tokens or more, hits in
	// increments of 128 tokens, no write premium; cached input is half the
	// input price for the gpt-4o family (the --model default, gpt-4o-mini).
	"openai": {Name: "openai", Read: 0.5, Write: 1, MinPrompt: 1024, Granule: 128, Cached: true},
	"none":   {Name: "none", Read: 1, Write: 1},
}

// PriceNames lists the models for help texts.
func PriceNames() string {
	var ns []string
	for n := range Prices {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return strings.Join(ns, ", ")
}

// LookupPrice returns the named model.
func LookupPrice(name string) (Price, error) {
	p, ok := Prices[name]
	if !ok {
		return Price{}, fmt.Errorf("unknown price model %q (want one of %s)", name, PriceNames())
	}
	return p, nil
}

// CallCost splits one call's prompt of n tokens, shared of which it has in
// common with the previous call, into cache reads and writes, and prices
// it in units of plain input tokens.
func (p Price) CallCost(n, shared int) (read, write int, cost float64) {
	if !p.Cached || n < p.MinPrompt {
		return 0, 0, float64(n)
	}
	if shared >= p.MinPrompt && shared > 0 {
		g := max(p.Granule, 1)
		read = p.MinPrompt + (shared-p.MinPrompt)/g*g
		read = min(read, shared)
	}
	write = n - read
	return read, write, float64(read)*p.Read + float64(write)*p.Write
}
