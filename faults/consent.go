package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxchaos/outboxchaos/rig"
)

// WithdrawConsent is the business side changing its mind mid-run: member
// Member withdraws SMS consent (members.sms_consent = false), as a user
// would in the app. Nothing may reach that member's phone afterwards; the
// relay and the worker each re-check consent and skip. It fired when the
// row was updated. Recover does not restore consent: the user said no.
type WithdrawConsent struct {
	Member int64
	fired  bool
	done   time.Time // when the withdrawal was committed
}

// Done returns when the withdrawal was committed (wall time), and
// whether it was.
func (c *WithdrawConsent) Done() (time.Time, bool) { return c.done, c.fired }

// Family is "withdraw-consent".
func (*WithdrawConsent) Family() string { return KindWithdrawConsent }

// Target is the member.
func (c *WithdrawConsent) Target() string { return fmt.Sprintf("member %d", c.Member) }

// Inject withdraws the member's consent in the run's schema.
func (c *WithdrawConsent) Inject(ctx context.Context, w World) error {
	// The database may be down by another fault of the run: the user's
	// change waits until it answers, as the app's would.
	var tag pgconn.CommandTag
	err := rig.UntilDBAnswers(ctx, func(f string, a ...any) { w.Logf("faults", f, a...) }, "withdraw consent", func() (err error) {
		tag, err = w.DB().Exec(ctx, `UPDATE members SET sms_consent = false WHERE id = $1`, c.Member)
		return err
	})
	if err != nil {
		return fmt.Errorf("withdraw consent of member %d: %w", c.Member, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("withdraw consent of member %d: no such member", c.Member)
	}
	c.fired, c.done = true, time.Now()
	w.Logf("faults", "member %d withdrew SMS consent", c.Member)
	return nil
}

// Momentary: the consent is withdrawn as it is injected.
func (*WithdrawConsent) Momentary() {}

// Recover does nothing: a withdrawal stands.
func (*WithdrawConsent) Recover(context.Context, World) error { return nil }

// Fired reports whether the withdrawal was written.
func (c *WithdrawConsent) Fired(World) (bool, string) {
	if c.fired {
		return true, fmt.Sprintf("member %d has no SMS consent", c.Member)
	}
	return false, "not injected"
}

func (c *WithdrawConsent) String() string {
	return fmt.Sprintf("member %d withdraws SMS consent", c.Member)
}

func buildWithdrawConsent(s Spec) (Fault, error) {
	if s.Member < 1 {
		return nil, fmt.Errorf("needs member (a member id >= 1)")
	}
	return &WithdrawConsent{Member: s.Member}, nil
}
