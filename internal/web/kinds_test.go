package web

import (
	"testing"

	"github.com/sophonz/st/internal/agent"
)

// TestDescribedKindOnThePage: a kind the user described in config.toml
// reaches the page as st's own do (kindInfos makes each known kind's by
// kindInfo), with its title and icon, and marked as read from its screen
// when it has no hooks (the page writes that after its state); st's own
// kinds are not so marked.
func TestDescribedKindOnThePage(t *testing.T) {
	k, err := agent.Describe("web-toy", agent.Description{Title: "Web toy", Icon: "▲", Program: "/bin/cat", Ready: []string{"> "}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindInfo(k), (KindInfo{Name: "web-toy", Title: "Web toy", Icon: "▲", Screen: true}); got != want {
		t.Errorf("the page gets %+v, want %+v", got, want)
	}
	got := map[string]KindInfo{}
	for _, ki := range kindInfos() {
		got[ki.Name] = ki
	}
	for _, name := range []string{"claude", "codex", "gemini", "sim"} {
		if ki := got[name]; ki.Icon == "" || ki.Screen {
			t.Errorf("%s: %+v, want its icon and no screen mark", name, ki)
		}
	}
}
