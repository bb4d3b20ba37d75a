package shell

import (
	"path"
	"reflect"
	"strings"
	"testing"
)

// writesOf lists what a command writes, as the old reader did: paths
// relative to the start folder /w, or absolute; "(tree)" for a command
// that changes the whole work tree; what st cannot know is left out.
func writesOf(cmd string) []string {
	s := Read(cmd, Env{Cwd: "/w"})
	if s.Err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range Writes(s.Cmds) {
		p := "(tree)"
		if !w.Tree {
			t, ok := w.Path.Text()
			if !ok {
				continue
			}
			if !strings.HasPrefix(t, "/") {
				d, ok := w.Dir.Text()
				if !ok {
					continue
				}
				t = path.Join(d, t)
				if strings.HasSuffix(w.Path.String(), "/") {
					t += "/"
				}
			}
			switch {
			case t == "/w":
				t = "."
			case strings.HasPrefix(t, "/w/"):
				t = t[3:]
			}
			p = t
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func TestWrites(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cmd  string
		want []string
	}{
		// Redirections.
		{"echo hi > out.txt", []string{"out.txt"}},
		{"echo hi >> log/app.log", []string{"log/app.log"}},
		{"echo hi>out", []string{"out"}},
		{"cat<in>out", []string{"out"}},
		{"make 2> err.txt", []string{"err.txt"}},
		{"make > build.log 2>&1", []string{"build.log"}},
		{"make &> all.log", []string{"all.log"}},
		{"make &>> all.log", []string{"all.log"}},
		{"make >& both.log", []string{"both.log"}},
		{"echo x >| forced", []string{"forced"}},
		{"exec 3<> rw.dat", []string{"rw.dat"}},
		{"ls > /dev/null 2>&1", nil},
		{"ls 2>/dev/null >/dev/stderr", nil},
		{"echo x >&2", nil},
		{"cmd 1>&- 2>&1", nil},
		{"sort < input.txt", nil},
		{"> empty.txt", []string{"empty.txt"}},
		{`echo "a > b" > 'my file.txt'`, []string{"my file.txt"}},
		{`echo a\>b > c`, []string{"c"}},
		// Separators and pipes.
		{"echo a > x; echo b > y && echo c > z || echo d > w", []string{"x", "y", "z", "w"}},
		{"ls | tee list.txt | wc -l", []string{"list.txt"}},
		{"make & echo done > flag", []string{"flag"}},
		{"echo a > one\necho b > two", []string{"one", "two"}},
		{"git status |& tee -a s.log", []string{"s.log"}},
		// tee, cp, mv, ln, install.
		{"echo x | tee a.txt b.txt", []string{"a.txt", "b.txt"}},
		{"tee -a --output-error=warn c.txt", []string{"c.txt"}},
		{"cp src/a.go src/b.go", []string{"src/b.go"}},
		{"cp -r a b dest/", []string{"dest/"}},
		{"cp -t dest a b", []string{"dest"}},
		{"cp --target-directory=dest a", []string{"dest"}},
		{"mv old.go new.go", []string{"old.go", "new.go"}},
		{"mv -f -- -weird.txt x", []string{"-weird.txt", "x"}},
		{"ln -s /opt/tool bin/tool", []string{"bin/tool"}},
		{"ln -sf ../shared/config.yml", []string{"config.yml"}},
		{"install -m 755 build/st /usr/local/bin/st", []string{"/usr/local/bin/st"}},
		{"install -d out/a out/b", []string{"out/a", "out/b"}},
		// Operands.
		{"rm -rf build dist", []string{"build", "dist"}},
		{"rm -- -f", []string{"-f"}},
		{"rmdir empty", []string{"empty"}},
		{"touch -d yesterday a.txt", []string{"a.txt"}},
		{"mkdir -p -m 700 a/b/c", []string{"a/b/c"}},
		{"truncate -s 0 big.log", []string{"big.log"}},
		{"unlink x", []string{"x"}},
		// chmod and friends.
		{"chmod +x script.sh", []string{"script.sh"}},
		{"chmod -R 755 bin", []string{"bin"}},
		{"chmod -x a b", []string{"a", "b"}},
		{"chmod --reference=ref target", []string{"target"}},
		{"chown -R user:group dir", []string{"dir"}},
		{"chgrp staff f", []string{"f"}},
		// sed and perl in place.
		{"sed -i 's/a/b/' file.txt", []string{"file.txt"}},
		{"sed -i.bak -e 's/a/b/' -e 's/c/d/' f1 f2", []string{"f1", "f2"}},
		{"sed -ni 's/a/b/p' f", []string{"f"}},
		{"sed --in-place=.orig 's/x/y/' conf", []string{"conf"}},
		{"sed -i '' 's/x/y/' mac.txt", []string{"mac.txt"}},
		{"sed -E -i 's/(a)/\\1/' g", []string{"g"}},
		{"sed -f script.sed -i h", []string{"h"}},
		{"sed 's/a/b/' readonly.txt > out.txt", []string{"out.txt"}},
		{"sed -n '1p' f", nil},
		{"perl -pi -e 's/a/b/' p1 p2", []string{"p1", "p2"}},
		{"perl -i.bak -pe 's/a/b/' p3", []string{"p3"}},
		{"perl -ne 'print' p4", nil},
		// git.
		{"git checkout -- a.go b.go", []string{"a.go", "b.go"}},
		{"git checkout HEAD~1 -- src/x.go", []string{"src/x.go"}},
		{"git checkout -b feature", nil},
		{"git checkout main", []string{"(tree)", "main"}}, // a branch: the whole tree
		{"git restore src/a.go", []string{"src/a.go"}},
		{"git restore --source=HEAD~2 --staged --worktree f", []string{"f"}},
		{"git restore -s main g", []string{"g"}},
		{"git rm -r --cached old", []string{"old"}},
		{"git mv a b", []string{"a", "b"}},
		{"git reset --hard HEAD", []string{"(tree)"}},
		{"git reset HEAD~1", []string{"(tree)"}},
		{"git reset HEAD -- f", []string{"f"}},
		{"git clean -fd", []string{"(tree)"}},
		{"git clean -n", nil},
		{"git stash", []string{"(tree)"}},
		{"git stash push -- src/x", []string{"src/x"}},
		{"git stash list", nil},
		{"git switch main", []string{"(tree)"}},
		{"git switch -c new", nil},
		{"git -C sub checkout -- f", []string{"sub/f"}},
		{"git -c core.x=y restore f", []string{"f"}},
		{"git status && git diff > d.patch", []string{"d.patch"}},
		{"git commit -am 'msg > not a file'", nil},
		// cd.
		{"cd src && echo x > a.go", []string{"src/a.go"}},
		{"cd /tmp; touch t", []string{"/tmp/t"}},
		{"cd src; cd ../docs; rm old.md", []string{"docs/old.md"}},
		{"(cd sub && touch in) && touch out", []string{"sub/in", "out"}},
		{"cd $DIR && rm x && rm /abs", []string{"/abs"}},
		{"cd && touch h", nil}, // $HOME is not known
		{"pushd lib >/dev/null && rm a.o", []string{"lib/a.o"}},
		// Wrappers, assignments, keywords.
		{"sudo tee /etc/hosts", []string{"/etc/hosts"}},
		{"sudo -u root rm -f /var/x", []string{"/var/x"}},
		{"FOO=1 BAR=2 touch z", []string{"z"}},
		{"env -u HOME X=1 rm e", []string{"e"}},
		{"timeout 10s rm slow", []string{"slow"}},
		{"nohup rm n > nohup.out", []string{"nohup.out", "n"}},
		{"time nice -n 5 touch tn", []string{"tn"}},
		{"/bin/rm -f abs-named", []string{"abs-named"}},
		{"if test -f a; then rm a; fi", []string{"a"}},
		{"while read l; do echo $l >> out; done < in", []string{"out"}},
		{"! touch neg", []string{"neg"}},
		{"{ echo a; echo b; } > grouped", []string{"grouped"}},
		{"for f in a b; do rm $f; done", []string{"a", "b"}},
		{"command -v rm", nil},
		{"command rm c", []string{"c"}},
		// Nested commands.
		{`bash -c "echo x > inner.txt"`, []string{"inner.txt"}},
		{`sh -ec 'cd d && rm y'`, []string{"d/y"}},
		{"echo $(rm sub1) > `touch sub2`", []string{"sub1", "sub2"}},
		{"diff <(sort a) <(sort b) > d", []string{"d"}},
		{"eval 'rm evald'", []string{"evald"}},
		{"x=$(cat f > g)", []string{"g"}},
		// What cannot be read is left out.
		{"echo x > $OUT", nil},
		{`echo x > "$HOME/f"`, nil},
		{"rm -rf ${DIR}/build", nil},
		{"touch $(date +%s).txt", nil},
		{"rm `ls`", nil},
		{"xargs rm < list", nil},
		{"python gen.py", nil},
		{"[[ a > b ]] && echo y", nil},
		{"(( x > 3 )) && touch big", []string{"big"}},
		{"echo $(( (1+2) > 3 )) > arith", []string{"arith"}},
		{"echo '$HOME' > lit", []string{"lit"}},
		{"rm docs/*.md", []string{"docs/*.md"}},
		{"echo a # > comment", nil},
		{"echo a#b > c", []string{"c"}},
		// Here-documents: bodies are not commands.
		{"cat > notes.md <<'EOF'\nrm -rf everything > /etc/x\nEOF\ntouch after", []string{"notes.md", "after"}},
		{"cat <<-EOF > t.txt\n\trm x\n\tEOF\n", []string{"t.txt"}},
		{"cat <<< 'rm x' > hs", []string{"hs"}},
		// apply_patch inside a shell command (Codex).
		{"apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: src/n.go\n+package n\n*** Update File: src/m.go\n*** Move to: src/k.go\n*** End Patch\nPATCH\n", []string{"src/n.go", "src/m.go", "src/k.go"}},
		{"cd pkg && apply_patch '*** Begin Patch\n*** Delete File: gone.go\n*** End Patch'", []string{"pkg/gone.go"}},
		// Others.
		{"dd if=/dev/zero of=disk.img bs=1M count=1", []string{"disk.img"}},
		{"curl -sSL -o out.tgz https://x", []string{"out.tgz"}},
		{"curl --output=o2 https://x", []string{"o2"}},
		{"wget -O w.html https://x", []string{"w.html"}},
		{"echo a > x; echo b > x", []string{"x"}},
		{"line \\\ncontinued > cont", []string{"cont"}},
		{"", nil},
		// rsync, tar, unzip and patch: their destinations (issue 23).
		{"rsync -a src/ /backup/src/", []string{"/backup/src/"}},
		{"rsync -av --delete build/ ../deploy", []string{"/deploy"}},
		{"rsync -a -e 'ssh -p 22' src/ host:/srv/app", nil},
		{"rsync -a --remove-source-files inbox/ archive/", []string{"archive/", "inbox/"}},
		{"rsync -ab --backup-dir=/tmp/bk a/ b/", []string{"b/", "/tmp/bk"}},
		{"rsync -n -a a/ b/", nil},
		{"rsync src/", nil},
		{"tar -xzf x.tgz", []string{"."}},
		{"tar -xf x.tar -C /opt", []string{"/opt"}},
		{"tar xzf x.tgz -C out", []string{"out"}},
		{"tar -C out -xf x.tar src/a.go", []string{"out/src/a.go"}},
		{"tar --extract --file=x.tar --directory=d", []string{"d"}},
		{"tar -xPf x.tar", []string{"/"}},
		{"tar -czf out.tgz src", []string{"out.tgz"}},
		{"tar --remove-files -cf a.tar logs", []string{"a.tar", "logs"}},
		{"tar -tf x.tar", nil},
		{"tar -xOf x.tar a", nil},
		{"tar -cf - src | wc -c", nil},
		{"unzip a.zip", []string{"."}},
		{"unzip -o a.zip -d vendor", []string{"vendor"}},
		{"unzip -q a.zip docs/x.md -d out", []string{"out/docs/x.md"}},
		{"unzip -l a.zip", nil},
		{"unzip -p a.zip f > g", []string{"g"}},
		{"patch -p1 < fix.patch", []string{"(tree)"}},
		{"patch -p1 <<'EOF'\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-x\n+y\nEOF", []string{"src/a.go"}},
		{"patch -p0 <<'EOF'\n--- src/a.go.orig\n+++ src/a.go\nEOF", []string{"src/a.go.orig", "src/a.go"}},
		{"patch <<'EOF'\n--- a/src/a.go\n+++ b/src/a.go\nEOF", []string{"a.go", "src/a.go"}},
		{"patch -d sub -p1 <<'EOF'\n--- a/x.go\n+++ b/x.go\nEOF", []string{"sub/x.go"}},
		{"patch src/a.go fix.patch", []string{"src/a.go"}},
		{"patch -o out.go src/a.go fix.patch", []string{"out.go"}},
		{"patch --dry-run -p1 < fix.patch", nil},
		// awk's print redirections, and one-liners that write files.
		{`awk '{print > "out.txt"}' in`, []string{"out.txt"}},
		{`awk '{ printf "%s\n", $1 >> "/tmp/log" }' f`, []string{"/tmp/log"}},
		{`awk '$1 > 5 {print}' f`, nil},
		{`awk '{print > $1}' f`, nil},
		{`gawk -i inplace '{sub(/a/,"b")}1' f1 f2`, []string{"f1", "f2"}},
		{`python3 -c "open('out.txt','w').write('x')"`, []string{"out.txt"}},
		{`python3 -c 'open("/etc/x", mode="a")'`, []string{"/etc/x"}},
		{`python3 -c 'print(open("in.txt").read())'`, nil},
		{`python3 -c 'import pathlib; pathlib.Path("p.txt").write_text("x")'`, []string{"p.txt"}},
		{`python3 -c 'import os; os.remove("gone")'`, []string{"gone"}},
		{`python3 -c 'import shutil; shutil.copy("a", "b")'`, []string{"b"}},
		{`python3 -c 'open(name, "w")'`, nil},
		{"python3 <<'EOF'\nopen('h.txt', 'w').write('x')\nEOF", []string{"h.txt"}},
		{`node -e 'require("fs").writeFileSync("n.txt", "x")'`, []string{"n.txt"}},
		{`node -e 'fs.renameSync("a", "b")'`, []string{"a", "b"}},
		{`perl -e 'open(my $f, ">", "pl.txt") or die'`, []string{"pl.txt"}},
		{`perl -e 'open(F, ">>log.txt")'`, []string{"log.txt"}},
		{`perl -e 'open(F, "<in.txt")'`, nil},
		{`perl -e 'unlink "x", "y"'`, []string{"x", "y"}},
		{`ruby -e 'File.write("r.txt", "x")'`, []string{"r.txt"}},
		{`php -r 'file_put_contents("ph.txt", "x");'`, []string{"ph.txt"}},
		// What the old reader got wrong.
		{"env -C sub rm x", []string{"sub/x"}},
		{"rm $'\\x41b'", []string{"Ab"}},
		{"a[ A>0 ]=1", nil},
		{"echo $[ a>b ]", nil},
		{"setsid rm s1; busybox rm s2; fakeroot rm s3; mksh -c 'rm s4'; time -o t.txt true", []string{"s1", "s2", "s3", "s4"}},
		{"/usr/bin/time -o t.txt true", []string{"t.txt"}},
		{"git checkout HEAD~3 -- :/", []string{"(tree)"}},
		{"git restore :/src/x", []string{"src/x"}},
		{"find . -name '*.o' -delete", []string{"."}},
		{"x=out.txt; echo hi > $x", []string{"out.txt"}},
		{"unterminated 'quote > x", nil},
		{"echo > ", nil},
	}
	for _, c := range cases {
		got := writesOf(c.cmd)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("writes(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
}

func FuzzWrites(f *testing.F) {
	for _, s := range []string{
		"echo hi > out.txt", "cd a && (rm b; cat <<EOF\nx\nEOF\n) | tee c",
		"bash -c 'eval \"rm $(touch x)\"'", "sed -i -e s/a/b/ f", "git -C d checkout -- x",
		"echo $((1+2)) `a` ${b} $'c\\n'", "cat <<-A <<B\n\tx\n\tA\ny\nB\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range writesOf(s) {
			if p == "" {
				t.Fatalf("writes(%q) gave an empty path", s)
			}
		}
	})
}

func TestPatchPaths(t *testing.T) {
	t.Parallel()
	patch := `*** Begin Patch
*** Add File: src/new.go
+package main
*** Update File: src/main.go
*** Move to: src/app.go
@@ func main() {
-	old()
+	new()
*** Delete File: docs/old.md
*** Update File: src/main.go
@@
 context
*** End Patch
`
	want := []string{"src/new.go", "src/main.go", "src/app.go", "docs/old.md"}
	if got := PatchPaths(patch); !reflect.DeepEqual(got, want) {
		t.Errorf("PatchPaths = %q, want %q", got, want)
	}
	crlf := strings.ReplaceAll("*** Begin Patch\n*** Add File: /abs/path with space.txt\n+x\n*** End Patch\n", "\n", "\r\n")
	if got := PatchPaths(crlf); !reflect.DeepEqual(got, []string{"/abs/path with space.txt"}) {
		t.Errorf("PatchPaths(CRLF) = %q", got)
	}
	indented := "  *** Begin Patch\n  *** Delete File: a.txt\n  *** End Patch"
	if got := PatchPaths(indented); !reflect.DeepEqual(got, []string{"a.txt"}) {
		t.Errorf("PatchPaths(indented) = %q", got)
	}
	if got := PatchPaths("no patch here\n+*** Add File: x\n"); len(got) != 0 {
		t.Errorf("PatchPaths(body line) = %q", got)
	}
	if got := PatchPaths("*** Add File:   \n"); len(got) != 0 {
		t.Errorf("PatchPaths(empty path) = %q", got)
	}
}
