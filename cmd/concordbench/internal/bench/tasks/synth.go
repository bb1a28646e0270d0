package tasks

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// The embedded default: synthetic multi-hop tasks in HotpotQA's format,
// generated from a seed with fictional names (so a real model cannot answer
// from memory). Four kinds rotate: a bridge to a city, a bridge to a number,
// a comparison of founding years, and a yes/no comparison of countries.

var (
	firstNames = []string{"Alma", "Bruno", "Cora", "Dmitri", "Elsa", "Farid", "Greta", "Hugo", "Ines", "Jonas",
		"Kira", "Lukas", "Mira", "Nils", "Orla", "Piet", "Rosa", "Soren", "Talia", "Viggo", "Wanda", "Yusuf"}
	lastNames = []string{"Arvane", "Brekke", "Castellin", "Dorrow", "Esterhall", "Falkmere", "Gorsky", "Halvard",
		"Istrom", "Jelinek", "Korvath", "Lindqvist", "Marrow", "Norbury", "Osterkamp", "Pellucci", "Quennell",
		"Ravensholt", "Silverdal", "Thorne", "Ulverstone", "Vandermeer"}
	companyA = []string{"Quill", "Amber", "Copper", "Lantern", "Harbor", "Juniper", "Meridian", "Northwind",
		"Obsidian", "Pinecrest", "Saffron", "Tidewater", "Vireo", "Willow"}
	companyB = []string{"field Press", "stone Works", "gate Labs", "line Foods", "brook Textiles", "wood Instruments",
		"vale Shipping", "crest Pharma", "mark Studios", "ridge Motors"}
	cities    = []string{"Varden", "Osterlake", "Brightmoor", "Calloway", "Dunmere", "Eskerby", "Fallowmere", "Grantholm", "Hollins Bay", "Ivory Falls", "Kestrel Point", "Lowmarsh"}
	countries = []string{"Norvenia", "Kaldora", "Estmark", "Valtrana", "Orsenne", "Belluria", "Tamsland", "Quorvia"}
	jobs      = []string{"chemist", "architect", "novelist", "engineer", "economist", "painter", "cartographer", "composer"}
	industry  = []string{"publishing", "engineering", "software", "food", "textile", "instrument", "shipping", "pharmaceutical", "film", "automotive"}
)

type person struct {
	name, job, city, country string
	born                     int
}

type company struct {
	name, industry, city, founder string
	founded, employees            int
}

type synthGen struct {
	r       *rand.Rand
	used    map[string]bool
	persons []person
	comps   []company
}

func (g *synthGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *synthGen) newPerson() person {
	for {
		n := g.pick(firstNames) + " " + g.pick(lastNames)
		if !g.used[n] {
			g.used[n] = true
			p := person{name: n, job: g.pick(jobs), city: g.pick(cities), country: g.pick(countries), born: 1920 + g.r.IntN(60)}
			g.persons = append(g.persons, p)
			return p
		}
	}
}

func (g *synthGen) newCompany(founder string) company {
	for {
		n := g.pick(companyA) + g.pick(companyB)
		if !g.used[n] {
			g.used[n] = true
			c := company{name: n, industry: g.pick(industry), city: g.pick(cities), founder: founder,
				founded: 1950 + g.r.IntN(60), employees: 100 * (5 + g.r.IntN(400))}
			g.comps = append(g.comps, c)
			return c
		}
	}
}

func (p person) paragraph(founded *company) Paragraph {
	s := []string{
		fmt.Sprintf("%s is a %s and author of several essays on %s.", p.name, p.job, p.city),
		fmt.Sprintf("%s was born in %d in %s, %s.", p.name, p.born, p.city, p.country),
	}
	if founded != nil {
		s = append(s, fmt.Sprintf("In %d, %s founded %s.", founded.founded, p.name, founded.name))
	}
	s = append(s, fmt.Sprintf("%s has lectured at universities across %s.", p.name, p.country))
	return Paragraph{Title: p.name, Sentences: s}
}

func (c company) paragraph() Paragraph {
	return Paragraph{Title: c.name, Sentences: []string{
		fmt.Sprintf("%s is a %s company.", c.name, c.industry),
		fmt.Sprintf("%s was founded in %d by %s.", c.name, c.founded, c.founder),
		fmt.Sprintf("%s is headquartered in %s.", c.name, c.city),
		fmt.Sprintf("%s employs %s people.", c.name, withCommas(c.employees)),
	}}
}

func withCommas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Synthetic generates n tasks from seed; the same seed gives the same tasks.
func Synthetic(seed uint64, n int) []Task {
	var out []Task
	for i := 0; len(out) < n; i++ {
		g := &synthGen{r: rand.New(rand.NewPCG(seed, uint64(i))), used: map[string]bool{}}
		t, err := g.task(fmt.Sprintf("syn-%d-%03d", seed, i), i%4)
		if err != nil {
			continue // a generator draw the builder rejects; the next index replaces it
		}
		out = append(out, t)
	}
	return out
}

// task builds one task of the given kind as a HotpotQA record, so the
// synthetic tasks go through the same builder (files, clozes, mutations).
func (g *synthGen) task(id string, kind int) (Task, error) {
	var rec Record
	rec.ID = id
	var paras []Paragraph
	switch kind {
	case 0, 1: // bridge: person -> company -> city or head count
		p := g.newPerson()
		c := g.newCompany(p.name)
		paras = []Paragraph{p.paragraph(&c), c.paragraph()}
		if kind == 0 {
			rec.Question = fmt.Sprintf("In which city is the company founded by %s headquartered?", p.name)
			rec.Answer, rec.Type = c.city, "bridge"
			rec.SupportingFacts = []Fact{{p.name, 2}, {c.name, 2}}
		} else {
			rec.Question = fmt.Sprintf("How many people does the company founded by %s employ?", p.name)
			rec.Answer, rec.Type = withCommas(c.employees), "bridge"
			rec.SupportingFacts = []Fact{{p.name, 2}, {c.name, 3}}
		}
	case 2: // comparison: which company was founded first
		a, b := g.newPerson(), g.newPerson()
		ca, cb := g.newCompany(a.name), g.newCompany(b.name)
		for cb.founded == ca.founded {
			cb.founded = 1950 + g.r.IntN(60)
		}
		g.comps[len(g.comps)-1] = cb
		paras = []Paragraph{ca.paragraph(), cb.paragraph()}
		rec.Question = fmt.Sprintf("Which company was founded first, %s or %s?", ca.name, cb.name)
		rec.Answer, rec.Type = ca.name, "comparison"
		if cb.founded < ca.founded {
			rec.Answer = cb.name
		}
		rec.SupportingFacts = []Fact{{ca.name, 1}, {cb.name, 1}}
	default: // yes/no: were two people born in the same country
		a, b := g.newPerson(), g.newPerson()
		if g.r.IntN(2) == 0 {
			b.country = a.country
		} else {
			for b.country == a.country {
				b.country = g.pick(countries)
			}
		}
		g.persons[len(g.persons)-1] = b
		paras = []Paragraph{a.paragraph(nil), b.paragraph(nil)}
		rec.Question = fmt.Sprintf("Were %s and %s born in the same country?", a.name, b.name)
		rec.Answer, rec.Type = "no", "comparison"
		if a.country == b.country {
			rec.Answer = "yes"
		}
		rec.SupportingFacts = []Fact{{a.name, 1}, {b.name, 1}}
	}
	// Distractors: people and companies with the same sentence shapes.
	for i := 0; i < 4; i++ {
		p := g.newPerson()
		c := g.newCompany(p.name)
		paras = append(paras, p.paragraph(&c), c.paragraph())
	}
	// Stable shuffle so evidence is not always the first files.
	g.r.Shuffle(len(paras), func(i, j int) { paras[i], paras[j] = paras[j], paras[i] })
	for _, p := range paras {
		rec.Context = append(rec.Context, Passage{Title: p.Title, Sentences: p.Sentences})
	}
	plan := func(t Task, facts []lineRef) (racePlan, error) {
		switch kind {
		case 2:
			return g.planEarlier(t, facts)
		case 3:
			return g.planSameCountry(t, facts, rec.Answer == "yes")
		}
		return planSpan(t, facts)
	}
	t, err := buildWith(rec, plan)
	if err != nil {
		return Task{}, err
	}
	t.Source = "synthetic"
	return t, nil
}

// slotAt makes a cloze of a line around the last occurrence of value.
func slotAt(p Paragraph, line int, value string) (Cloze, [2]int, error) {
	s := p.Sentences[line-1]
	lo := strings.LastIndex(s, value)
	if lo < 0 {
		return Cloze{}, [2]int{}, fmt.Errorf("%s line %d: %q not found", p.File, line, value)
	}
	hi := lo + len(value)
	c := Cloze{File: p.File, Line: line, Prefix: s[:lo], Suffix: s[hi:]}
	return c, [2]int{lo, hi}, nil
}

// planEarlier: both founding years are mutated so that either stale line
// alone flips which company looks older.
func (g *synthGen) planEarlier(t Task, facts []lineRef) (racePlan, error) {
	pa, pb := t.Paragraphs[facts[0].para], t.Paragraphs[facts[1].para]
	ya, yb := g.foundedOf(pa.Title), g.foundedOf(pb.Title)
	// Make a later than b and b earlier than a, each by 1-5 years.
	na, nb := yb+1+g.r.IntN(5), ya-1-g.r.IntN(5)
	if ya > yb {
		na, nb = yb-1-g.r.IntN(5), ya+1+g.r.IntN(5)
	}
	pl := racePlan{probe: Probe{Kind: ProbeEarlier, Options: []string{pa.Title, pb.Title}}, slots: map[string][2]int{}}
	for _, x := range []struct {
		p       Paragraph
		line    int
		old, nw int
	}{{pa, facts[0].line, ya, na}, {pb, facts[1].line, yb, nb}} {
		c, sl, err := slotAt(x.p, x.line, strconv.Itoa(x.old))
		if err != nil {
			return racePlan{}, err
		}
		pl.probe.Clozes = append(pl.probe.Clozes, c)
		pl.slots[slotKey(x.p.File, x.line)] = sl
		orig := x.p.Sentences[x.line-1]
		pl.mutations = append(pl.mutations, Mutation{File: x.p.File, Line: x.line, Original: orig,
			Mutated: c.Prefix + strconv.Itoa(x.nw) + c.Suffix, Kind: "date"})
	}
	return pl, nil
}

// planSameCountry: the slots are the two birth countries; the mutation
// changes the second person's country so the comparison flips.
func (g *synthGen) planSameCountry(t Task, facts []lineRef, same bool) (racePlan, error) {
	pa, pb := t.Paragraphs[facts[0].para], t.Paragraphs[facts[1].para]
	ca, cb := g.countryOf(pa.Title), g.countryOf(pb.Title)
	c1, s1, err := slotAt(pa, facts[0].line, ca)
	if err != nil {
		return racePlan{}, err
	}
	c2, s2, err := slotAt(pb, facts[1].line, cb)
	if err != nil {
		return racePlan{}, err
	}
	nw := ca
	if same {
		for nw == ca {
			nw = g.pick(countries)
		}
	}
	return racePlan{
		probe: Probe{Kind: ProbeSame, Clozes: []Cloze{c1, c2}},
		mutations: []Mutation{{File: pb.File, Line: facts[1].line, Original: pb.Sentences[facts[1].line-1],
			Mutated: c2.Prefix + nw + c2.Suffix, Kind: "comparison"}},
		slots: map[string][2]int{slotKey(pa.File, facts[0].line): s1, slotKey(pb.File, facts[1].line): s2},
	}, nil
}

func (g *synthGen) foundedOf(name string) int {
	for _, c := range g.comps {
		if c.name == name {
			return c.founded
		}
	}
	return 0
}

func (g *synthGen) countryOf(name string) string {
	for _, p := range g.persons {
		if p.name == name {
			return p.country
		}
	}
	return ""
}
