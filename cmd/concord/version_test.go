package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// TestStampOf: what `concord version` says of a binary built without
// -ldflags comes from the toolchain's stamp (issue 37: `go install` from a
// clone said "commit unknown"); what -ldflags set wins.
func TestStampOf(t *testing.T) {
	vcs := func(mod string, kv ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/concord-ctx/concord", Version: mod}}
		for i := 0; i+1 < len(kv); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return info
	}
	clone := []string{"vcs", "git", "vcs.revision", "289b2af2b2a87cdfc6628930b534bd2b06b8ab2c", "vcs.time", "2026-12-05T09:12:15Z", "vcs.modified", "false"}
	tests := []struct {
		name                    string
		info                    *debug.BuildInfo
		ldVersion, ldCommit, ld string
		want                    stamp
	}{
		{"no build info, no ldflags", nil, devVersion, "", "", stamp{devVersion, "unknown", "unknown"}},
		{"-buildvcs=false: nothing to say", vcs("(devel)"), devVersion, "", "", stamp{devVersion, "unknown", "unknown"}},
		{"go build in a clean clone", vcs("v0.0.0-20261205091215-289b2af2b2a8", clone...), devVersion, "", "", stamp{devVersion, "289b2af2b2a8", "2026-12-05T09:12:15Z"}},
		{"go install in a changed clone", vcs("v0.0.0-20261205091215-289b2af2b2a8+dirty", "vcs.revision", "289b2af2b2a87cdfc6628930b534bd2b06b8ab2c", "vcs.time", "2026-12-05T09:12:15Z", "vcs.modified", "true"), devVersion, "", "",
			stamp{devVersion, "289b2af2b2a8+dirty", "2026-12-05T09:12:15Z"}},
		{"go install ...@commit: the pseudo-version alone", vcs("v0.0.0-20261205091215-289b2af2b2a8"), devVersion, "", "", stamp{devVersion, "289b2af2b2a8", "2026-12-05T09:12:15Z"}},
		{"pseudo-version after a tag", vcs("v0.1.1-0.20261205091215-289b2af2b2a8"), devVersion, "", "", stamp{devVersion, "289b2af2b2a8", "2026-12-05T09:12:15Z"}},
		{"go install ...@v0.2.0: a release", vcs("v0.2.0"), devVersion, "", "", stamp{"0.2.0", "unknown", "unknown"}},
		{"a prerelease tag", vcs("v0.2.0-rc.1"), devVersion, "", "", stamp{"0.2.0-rc.1", "unknown", "unknown"}},
		{"make build: ldflags commit and date win", vcs("v0.0.0-20261205091215-289b2af2b2a8", clone...), devVersion, "b1c5c416fd8b", "2026-12-06T10:00:00Z", stamp{devVersion, "b1c5c416fd8b", "2026-12-06T10:00:00Z"}},
		{"make dist: ldflags version wins", vcs("v0.2.0"), "0.1.0", "b1c5c416fd8b", "2026-12-06T10:00:00Z", stamp{"0.1.0", "b1c5c416fd8b", "2026-12-06T10:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stampOf(tt.info, tt.ldVersion, tt.ldCommit, tt.ld); got != tt.want {
				t.Errorf("stampOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestVersionOfPlainBuild: the real binary, built without -ldflags (TestMain),
// says the commit and module version the toolchain stamped into it, whatever
// this checkout allows (`go version -m` reads the same stamp).
func TestVersionOfPlainBuild(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", concordBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			settings["mod"] = f[2]
		case len(f) >= 2 && f[0] == "build":
			if k, v, ok := strings.Cut(f[1], "="); ok {
				settings[k] = v
			}
		}
	}
	got, _, code := runBin(t, "version")
	if code != 0 {
		t.Fatalf("status %d", code)
	}
	want := "commit unknown"
	if rev := settings["vcs.revision"]; rev != "" {
		want = "commit " + rev[:12]
	} else if m := pseudoVersion.FindStringSubmatch(settings["mod"]); m != nil {
		want = "commit " + m[2]
	}
	if !strings.Contains(got, want) {
		t.Errorf("concord version = %q, want %q (go version -m: %v)", got, want, settings)
	}
	t.Logf("%s(stamp: %v)", got, settings)
}
