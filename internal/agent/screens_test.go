package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The screens of real agents, one folder per kind and version under
// testdata/screens, captured in tmux by scripts/compat --capture (the
// test TestCaptureScreens in tests/real). What each screen is comes from
// how it was brought about, so this table holds every recogniser to every
// version st was tested on, without running the agents.

// screenWants is what a recogniser must make of each captured screen.
var screenWants = map[string]struct {
	screens []Screen // any of these
	box     bool     // the box holds capture.json's typed text
}{
	"start":      {screens: []Screen{ScreenUnknown, ScreenReady}}, // drawn at once or not yet: never a screen to wait on
	"ready":      {screens: []Screen{ScreenReady}},
	"typed":      {screens: []Screen{ScreenTyped}, box: true},
	"working":    {screens: []Screen{ScreenWorking}},
	"idle":       {screens: []Screen{ScreenReady}},
	"permission": {screens: []Screen{ScreenPrompt}},
	"question":   {screens: []Screen{ScreenPrompt}},
	"trust":      {screens: []Screen{ScreenTrust}},
	"login":      {screens: []Screen{ScreenLogin}},
}

// fixtureInfo is the part of capture.json this test reads.
type fixtureInfo struct {
	Kind    string            `json:"kind"`
	Version string            `json:"version"`
	Typed   string            `json:"typed"`
	Missing map[string]string `json:"missing"`
}

func TestScreenFixtures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "screens", "*", "*"))
	if len(dirs) == 0 {
		t.Fatal("no captured screens under testdata/screens (scripts/compat --capture writes them)")
	}
	versions := map[string][]string{}
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "capture.json"))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		var info fixtureInfo
		if err := json.Unmarshal(data, &info); err != nil {
			t.Errorf("%s/capture.json: %v", dir, err)
			continue
		}
		if filepath.Base(filepath.Dir(dir)) != info.Kind || filepath.Base(dir) != info.Version {
			t.Errorf("%s holds the screens of %s %s", dir, info.Kind, info.Version)
		}
		versions[info.Kind] = append(versions[info.Kind], info.Version)
		ad, err := Lookup(info.Kind)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		for state, want := range screenWants {
			t.Run(info.Kind+"/"+info.Version+"/"+state, func(t *testing.T) {
				raw, err := os.ReadFile(filepath.Join(dir, state+".txt"))
				if os.IsNotExist(err) && info.Missing[state] != "" {
					t.Skipf("not captured: %s", info.Missing[state])
				}
				if err != nil {
					t.Fatal(err)
				}
				v := ad.Recognize(string(raw))
				ok := false
				for _, s := range want.screens {
					ok = ok || v.Screen == s
				}
				if !ok {
					t.Errorf("read as %v, want %v:\n%s", v.Screen, want.screens, plainScreen(string(raw)))
				}
				switch {
				case want.box && v.Box != info.Typed:
					t.Errorf("box %q, want %q", v.Box, info.Typed)
				case !want.box && v.Screen != ScreenWorking && v.Box != "":
					t.Errorf("box %q, want it empty", v.Box)
				}
			})
		}
	}
	// Both ends of every tested range have their screens here.
	for kind, r := range TestedRange() {
		for _, end := range []string{r.Oldest, r.Newest} {
			if !strings.Contains(" "+strings.Join(versions[kind], " ")+" ", " "+end+" ") {
				t.Errorf("%s %s is an end of the tested range but has no screens in testdata/screens", kind, end)
			}
		}
	}
}

// plainScreen drops escapes and blank lines, for a failure's message.
func plainScreen(s string) string {
	var out []string
	for _, l := range strings.Split(ansiRE().ReplaceAllString(s, ""), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
