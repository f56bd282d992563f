package checker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoIO: the checker's purity is enforced by its import graph, as
// porcupine's is: no database, broker or HTTP client among its
// dependencies, so a verdict never depends on a live system. The auditor
// the checker imports is held to the same by the same list.
func TestImportsNoIO(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/jackc/pgx", "github.com/rabbitmq/amqp091-go", "net/http", "database/sql"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("checker depends on %s", dep)
			}
		}
	}
}
