package tokens

import "testing"

func TestEncodeKnownIDs(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	// Reference ids from OpenAI's cl100k_base for these strings.
	cases := []struct {
		in   string
		want []int
	}{
		{"hello world", []int{15339, 1917}},
		{"", nil},
	}
	for _, tc := range cases {
		got := c.Encode(tc.in)
		if len(got) != len(tc.want) {
			t.Fatalf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
	if c.Count("hello world") != 2 {
		t.Fatal("Count disagrees with Encode")
	}
}

func TestCommonPrefix(t *testing.T) {
	cases := []struct {
		a, b []int
		want int
	}{
		{nil, nil, 0},
		{[]int{1, 2, 3}, []int{1, 2, 3}, 3},
		{[]int{1, 2, 3}, []int{1, 2}, 2},
		{[]int{1, 2, 3}, []int{1, 9, 3}, 1},
		{[]int{4}, []int{1}, 0},
	}
	for _, tc := range cases {
		if got := CommonPrefix(tc.a, tc.b); got != tc.want {
			t.Errorf("CommonPrefix(%v,%v)=%d want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func BenchmarkEncodeUncached(b *testing.B) {
	c, err := New()
	if err != nil {
		b.Fatal(err)
	}
	text := "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer. He lives in Los Angeles, California."
	b.ReportAllocs()
	for b.Loop() {
		_ = c.enc.EncodeOrdinary(text)
	}
}
