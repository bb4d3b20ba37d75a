package tmux

import (
	"reflect"
	"testing"
)

func TestParseFront(t *testing.T) {
	got := parseFront("0 %3\n1 %1\n0 %7\n\n0 junk\n0 %3\n")
	if want := map[string]bool{"%3": true, "%7": true}; !reflect.DeepEqual(got, want) {
		t.Fatalf("front = %v, want %v (a control client shows no one anything)", got, want)
	}
}
