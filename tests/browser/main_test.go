package browser

import (
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

// TestMain runs the other user's server when this binary is started as
// one (otherport_test.go), and otherwise the tests; it removes the st
// binary they built when they end.
func TestMain(m *testing.M) {
	runOtherPortServer()
	testutil.Main(m)
}
