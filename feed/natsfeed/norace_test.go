//go:build feed && !race

package natsfeed_test

const raceEnabled = false
