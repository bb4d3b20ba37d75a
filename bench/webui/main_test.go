package webui

import (
	"testing"

	"github.com/sophonz/st/internal/testutil"
)

// TestMain removes the st binary the benchmark built, when it ends.
func TestMain(m *testing.M) { testutil.Main(m) }
