// Package plain is the one check for text that st types into an agent or
// prints to a person: a summary, an objective, a gate's question, a line
// for st worker send, a worker's name or answer that came from another
// machine. Printed raw or typed as keys, a control character acts on the
// reader's terminal or the agent's input box: ESC and CSI (C0 and C1)
// start escape sequences that can clear a screen, retitle it, write its
// clipboard or press keys, and a line break submits a prompt early. So
// every such text passes here, local input and a peer's answer alike.
package plain

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Control reports whether r would act on a terminal rather than show:
// the C0 controls, DEL, and the C1 controls U+0080-U+009F (U+009B is a
// CSI on terminals that take 8-bit controls).
func Control(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

// Hidden reports whether r is a format character that changes how the
// text around it shows without showing itself: the bidi controls
// (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), which can
// show a text's end first ("Trojan Source"), zero-width spaces, and the
// other format characters (Unicode's Cf), save the zero-width joiner and
// non-joiner that emoji and some scripts need. Shown to a person, such a
// character is made visible (Clean); kept in a text it is harmless.
func Hidden(r rune) bool {
	return r != '\u200c' && r != '\u200d' && unicode.Is(unicode.Cf, r)
}

// Error says what is wrong with a text and where.
type Error struct {
	// Rune is the offending character (utf8.RuneError for bytes that are
	// not UTF-8).
	Rune rune
	// Offset is its byte offset in the text.
	Offset int
	// Break is set when the problem is a line break in a one-line text.
	Break bool
}

// What names the problem, to follow "the text has": "a line break",
// "a control character (U+001B)", "bytes that are not UTF-8".
func (e *Error) What() string {
	switch {
	case e.Break:
		return "a line break"
	case e.Rune == utf8.RuneError:
		return "bytes that are not UTF-8"
	}
	return fmt.Sprintf("a control character (%U)", e.Rune)
}

func (e *Error) Error() string { return fmt.Sprintf("it has %s (at byte %d)", e.What(), e.Offset) }

// Text checks a text that may span lines: line breaks and tabs are kept,
// any other control character and any byte that is not UTF-8 are refused.
func Text(s string) error { return check(s, true) }

// Line checks a text that must stay one line (it is typed as one prompt,
// or shown in one row): no control character at all, not even a break.
func Line(s string) error { return check(s, false) }

func check(s string, multiline bool) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return &Error{Rune: utf8.RuneError, Offset: i}
			}
			continue
		}
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if r == '\n' || r == '\r' {
			return &Error{Rune: r, Offset: i, Break: true}
		}
		if Control(r) {
			return &Error{Rune: r, Offset: i}
		}
	}
	return nil
}

// Clean makes a text safe to show to a person: each control character
// other than a line break or tab, each Hidden format character (a bidi
// control such as U+202E), and each byte that is not UTF-8, becomes
// U+FFFD. For every text st prints that it did not write itself: an
// agent's answer, a worker's summary, a gate's question. Shown, never
// typed.
func Clean(s string) string {
	if Text(s) == nil && !strings.ContainsFunc(s, Hidden) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				b.WriteRune(utf8.RuneError)
				continue
			}
			b.WriteRune(r)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case Control(r), Hidden(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
