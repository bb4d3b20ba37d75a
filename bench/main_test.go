package bench

import (
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

// TestMain removes the st binary the tests built, when they end. Started
// again as a floor process (floorWrite), the test binary does only that.
func TestMain(m *testing.M) {
	if floorMain() {
		return
	}
	testutil.Main(m)
}
