package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
)

// BusinessShape is how a run's business rows differ from one row per
// member and table (BusinessRows).
type BusinessShape struct {
	// SecondGrade lists the members with a second grade history in the
	// month (ids from secondGradeBase), when grade renewals are enqueued.
	SecondGrade []int64 `json:"second_grade,omitempty"`
}

// secondGradeBase is where the ids of the second grade histories start,
// clear of the first ones' (gradeHistoryBase + member).
const secondGradeBase = 700000

func (sh BusinessShape) String() string {
	var ms []string
	for _, m := range sh.SecondGrade {
		ms = append(ms, fmt.Sprint(m))
	}
	return "second-grade=[" + strings.Join(ms, ",") + "]"
}

// Apply adds the shape's rows to b, the rows a job run at now enqueueing
// perKind members of kinds (none: every kind) reads; a nil shape adds
// none.
func (sh *BusinessShape) Apply(b *auditor.Business, now time.Time, perKind int, kinds []string) {
	if sh == nil || (len(kinds) > 0 && !slices.Contains(kinds, auditor.GradeRenewal)) {
		return
	}
	month := now.In(auditor.Seoul).Format("2006-01")
	for _, m := range sh.SecondGrade {
		if m >= 1 && m <= int64(perKind) {
			b.GradeHistories = append(b.GradeHistories, auditor.GradeHistory{ID: secondGradeBase + m, MemberID: m, Grade: "PLATINUM", Month: month})
		}
	}
}
