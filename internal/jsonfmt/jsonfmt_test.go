package jsonfmt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// cases are JSON texts whose indentation json.Indent defines: nesting,
// empty objects and arrays, strings with escapes and brackets in them,
// numbers, literals, and space before, between and after.
var cases = []string{
	`{}`, `[]`, `0`, `"x"`, `null`, `true`, `-1.5e+10`,
	`{"a":1}`, `[1,2,3]`, `{"a":{},"b":[],"c":[{}],"d":[[]]}`,
	`{"s":"a \"quoted\" {string} [with] , : brackets\\","t":"\u2028\n\\\\"}`,
	`[{"id":"%1","since":"2026-12-07T16:00:00Z","n":null,"ok":false,"tokens":{"in":10,"out":2}}]` + "\n",
	"  \n\t{ \"a\" : [ 1 , 2 ] , \"b\" : { } }  \n",
	`[[[[1]]],{"a":[{"b":[{"c":"d"}]}]}]`,
}

func TestIndentIsJSONIndent(t *testing.T) {
	for _, c := range cases {
		checkSame(t, c)
	}
}

func checkSame(t *testing.T, src string) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, []byte(src), "", "  "); err != nil {
		t.Fatalf("json.Indent(%q): %v", src, err)
	}
	if got := Indent([]byte("prefix:"), []byte(src)); string(got) != "prefix:"+want.String() {
		t.Errorf("Indent(%q) =\n%s\nwant\n%s", src, got, want.String())
	}
}

// What encoding/json writes of any value is indented as json.Indent
// indents it.
func FuzzIndentIsJSONIndent(f *testing.F) {
	for _, c := range cases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		checkSame(t, src) // the text as it came (valid, any spacing)
		enc, _ := json.Marshal(v)
		checkSame(t, string(enc))
		checkSame(t, strings.Repeat(" ", len(src)%3)+string(enc)+"\n")
	})
}
