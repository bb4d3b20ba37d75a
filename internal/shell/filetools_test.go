package shell

import "testing"

// TestFileRunners: File tools: xargs with its input known (split as xargs does, -I replacing) or a hole; find -exec with {} a path found (a hole); parallel's text when it can tell it; watchers.
func TestFileRunners(t *testing.T) {
	t.Parallel()
	readsAs(t, []readCase{
		{`echo a b | xargs tmux`, `echo a b; xargs tmux; tmux a b [xargs]`},
		{`printf 'x\ny\n' | xargs -I{} tmux {}`, `printf x\ny\n; xargs -I{} tmux {}; tmux y [xargs]; tmux x [xargs]`},
		{`xargs -a f tmux`, `xargs -a f tmux; tmux <(xargs input)> [xargs]`},
		{`printf 'a\0b' | xargs -0 echo`, `printf a\0b; xargs -0 echo; echo a b [xargs]`},
		{`echo 'a b' | xargs -n 1 echo`, `echo a b; xargs -n 1 echo; echo a b [xargs]`},
		{`echo 'x' | xargs`, `echo x; xargs; echo x [xargs]`},
		{`echo "'a b' c" | xargs echo`, `echo 'a b' c; xargs echo; echo a b c [xargs]`},
		{`echo $X | xargs tmux`, `echo <$X>; xargs tmux; tmux <(xargs input)> [xargs]`},
		{`xargs -r echo < /dev/null`, `xargs -r echo; echo <(xargs input)> [xargs]`},
		{`find . -name x -exec rm {} +`, `find . -name x -exec rm {} +; rm <{}> [find]`},
		{`find . -execdir tmux ls \;`, `find . -execdir tmux ls ;; tmux ls [find]`},
		{`find . -ok rm {} \;`, `find . -ok rm {} ;; rm <{}> [find]`},
		{`find /tmp -exec sh -c 'echo $1' _ {} \;`, `find /tmp -exec sh -c echo $1 _ {} ;; sh -c echo $1 _ <{}> [find]; echo <{}> [find,sh]`},
		{`find .`, `find .`},
		{`fd -x tmux ls`, `fd -x tmux ls; tmux ls [fd]`},
		{`fd . -X rm`, `fd . -X rm; rm [fd]`},
		{`fd pat`, `fd pat`},
		{`fd -e go -x gofmt -w {}`, `fd -e go -x gofmt -w {}; gofmt -w <{}> [fd]`},
		{`parallel echo ::: a b`, `parallel echo ::: a b; echo a [parallel]; echo b [parallel]`},
		{`parallel ::: 'tmux ls'`, `parallel ::: tmux ls; TEXT<parallel ::: tmux ls> [parallel]`},
		{`parallel -j2 'echo {}' ::: a`, `parallel -j2 echo {} ::: a; TEXT<parallel -j2 echo {} ::: a> [parallel]`},
		{`parallel echo {}`, `parallel echo {}; TEXT<parallel echo {}> [parallel]`},
		{`ls | parallel`, `ls; parallel; TEXT<parallel > [parallel]`},
		{`ls | entr tmux ls`, `ls; entr tmux ls; tmux ls [entr]`},
		{`ls | entr -s 'tmux ls'`, `ls; entr -s tmux ls; tmux ls [entr]`},
		{`ls | entr -r make`, `ls; entr -r make; make [entr]`},
		{`watchexec -e go 'tmux ls'`, `watchexec -e go tmux ls; tmux ls [watchexec]`},
		{`watchexec --shell=bash -- tmux ls`, `watchexec --shell=bash -- tmux ls; tmux ls [watchexec]`},
		{`watchexec -w src -- make`, `watchexec -w src -- make; make [watchexec]`},
		// -i and --replace take their value attached only: the next word is the command (it was taken for the value, and xargs -i tmux {} ran "{}").
		{`echo kill-server | xargs -i tmux {}`, `echo kill-server; xargs -i tmux {}; tmux kill-server [xargs]`},
		{`echo a | xargs -i% echo %`, `echo a; xargs -i% echo %; echo a [xargs]`},
		{`echo kill-server | xargs --replace tmux {}`, `echo kill-server; xargs --replace tmux {}; tmux kill-server [xargs]`},
		{`echo a | xargs --replace=@ echo @`, `echo a; xargs --replace=@ echo @; echo a [xargs]`},
	})
}
