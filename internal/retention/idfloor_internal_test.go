package retention

import (
	"testing"
	"time"

	"leadpipe/internal/ids"
)

// idFloor(t) sorts after every id made before t and before every id made
// from t's next millisecond on.
func TestIDFloor(t *testing.T) {
	for i := 0; i < 50; i++ {
		before := ids.New()
		time.Sleep(2 * time.Millisecond)
		at := time.Now()
		time.Sleep(2 * time.Millisecond)
		after := ids.New()
		f := idFloor(at)
		if len(f) != 26 || !(before < f && f < after) {
			t.Fatalf("%s < %s < %s does not hold", before, f, after)
		}
	}
}
