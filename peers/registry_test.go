package peers

import (
	"sync"
	"testing"
)

// TestAddBesideLookups: the chaos suite registers the Node.js relay while
// other runs look peers up and read their deadlines; under -race, an
// unguarded registry fails here.
func TestAddBesideLookups(t *testing.T) {
	before := All()
	t.Cleanup(func() {
		registryMu.Lock()
		registry = before
		registryMu.Unlock()
	})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Go(func() {
			for j := 0; j < 100; j++ {
				_ = All()
				if _, err := Lookup(Ours); err != nil {
					t.Error(err)
				}
				_ = Names()
			}
		})
	}
	if err := Add(Peer{Name: "registry-test-relay"}); err != nil {
		t.Fatal(err)
	}
	if err := Add(Peer{Name: "registry-test-relay"}); err == nil {
		t.Error("a name taken twice was registered")
	}
	wg.Wait()
	if _, err := Lookup("registry-test-relay"); err != nil {
		t.Errorf("the added peer is not found: %v", err)
	}
}
