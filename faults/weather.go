package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

// KindVendorWeather is the fake vendor's weather over a stretch of a run:
// a share of every send times out, fails or is throttled.
const KindVendorWeather = "vendor-weather"

// VendorWeather makes the fake vendor answer each send that no rule
// matches by a seeded draw (fakevendor.Weather) while it is in place: the
// background failure rate of a real vendor, as a simulated day has it. It
// fired when the weather answered a send with a fault.
type VendorWeather struct {
	Weather fakevendor.Weather
}

// Family is "vendor-weather".
func (v *VendorWeather) Family() string { return KindVendorWeather }

// Target is the vendor.
func (v *VendorWeather) Target() string { return "vendor" }

// Inject sets the weather.
func (v *VendorWeather) Inject(_ context.Context, w World) error {
	w.Vendor().SetWeather(&v.Weather)
	return nil
}

// Recover ends it: the vendor's default answers again.
func (v *VendorWeather) Recover(_ context.Context, w World) error {
	w.Vendor().SetWeather(nil)
	return nil
}

// Fired counts the sends the weather answered, by mode.
func (v *VendorWeather) Fired(w World) (bool, string) {
	by := w.Vendor().WeatherAnswers()
	modes := make([]string, 0, len(by))
	n := 0
	for m, k := range by {
		modes = append(modes, fmt.Sprintf("%s %d", m, k))
		n += k
	}
	sort.Strings(modes)
	if n == 0 {
		return false, "no send met the weather"
	}
	return true, fmt.Sprintf("%d sends met the weather: %s", n, strings.Join(modes, ", "))
}

// Reach: the vendor's answer to a send, for as long as it lasts.
func (v *VendorWeather) Reach() Reach {
	return Reach{Phases: []string{PhaseSend}, Windowed: true, Components: []string{ComponentVendor}}
}

func (v *VendorWeather) String() string {
	return fmt.Sprintf("vendor weather: timeout %g, 5xx %g, 429 %g of sends (seed %d)",
		v.Weather.Timeout, v.Weather.Fail5xx, v.Weather.Throttle, v.Weather.Seed)
}

func buildVendorWeather(s Spec) (Fault, error) {
	if s.Weather == nil {
		return nil, fmt.Errorf("needs weather (the shares of sends that time out, fail with a 5xx, are throttled, and a seed)")
	}
	if err := s.Weather.Validate(); err != nil {
		return nil, err
	}
	return &VendorWeather{Weather: *s.Weather}, nil
}
