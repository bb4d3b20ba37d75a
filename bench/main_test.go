package bench

import (
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

// TestMain removes the st binary the tests built, when they end.
func TestMain(m *testing.M) { testutil.Main(m) }
