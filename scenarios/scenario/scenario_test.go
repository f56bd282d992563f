package scenario

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseRejectsBadScenarios: clear errors for what a user can get wrong.
func TestParseRejectsBadScenarios(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ json, want string }{
		{`{"name":"x","steps":[{"do":"jump"}]}`, `unknown step "jump"`},
		{`{"name":"x","steps":[{"do":"start","roles":["dancer"]}]}`, `unknown role "dancer"`},
		{`{"name":"x","steps":[{"do":"inject","faults":[{"kind":"meteor"}]}]}`, `unknown fault kind "meteor"`},
		{`{"name":"x","steps":[{"do":"start","roles":["relay"],"faults":[{"kind":"kill-point","point":"relay.nowhere"}]}]}`, `unknown kill-point "relay.nowhere"`},
		{`{"name":"x","steps":[{"do":"inject","faults":[{"kind":"kill-point","point":"relay.after-claim"}]}]}`, `is armed in a pod`},
		{`{"name":"x","steps":[{"do":"start","roles":["relay"],"faults":[{"kind":"down","link":"postgres"}]}]}`, `is not armed in a pod`},
		{`{"name":"x","steps":[{"do":"inject","faults":[{"kind":"down","link":"mars"}]}]}`, `unknown link "mars"`},
		{`{"name":"x","steps":[{"do":"await","cond":{"ledger":1,"copies":2}}]}`, `exactly one of its fields`},
		{`{"name":"x","steps":[{"do":"await","cond":{"rows":{"table":"users","n":1}}}]}`, `unknown table "users"`},
		{`{"name":"x","steps":[{"do":"during","faults":[{"kind":"unbind"}]}]}`, `exactly one of cond and for`},
		{`{"name":"x","steps":[{"do":"await","cond":{"no_event":{"pod":"worker-1"}}}]}`, `no_event: needs name`},
		{`{"name":"x","steps":[{"do":"await","cond":{"no_event":{"name":"ack","n":2}}}]}`, `no n, no fresh`},
		{`{"name":"x","steps":[],"expect":[{"rule":"vibes"}]}`, `unknown rule "vibes"`},
		{`{"name":"x","steps":[],"kinds":["SPAM"]}`, `unknown kind "SPAM"`},
		{`{"name":"x","steps":[],"start":"25:00:00"}`, `want hh:mm:ss`},
		{`{"name":"x","steps":[],"colour":"red"}`, `unknown field "colour"`},
		{`{"name":"x","steps":[],"config":{"batch-sise":"5"}}`, `unknown setting "batch-sise"`},
		{`{"name":"x","steps":[],"config":{"batch-size":"many"}}`, `OUTBOXCHAOS_BATCH_SIZE`},
		{`{"name":"x","steps":[{"do":"inject","faults":[{"kind":"latency","link":"vendor","delay":"soon"}]}]}`, `duration "soon"`},
		{`{"name":"x","steps":[{"do":"start","roles":["relay"],"faults":[{"kind":"clock","at":"noon"}]}]}`, `want "hh:mm"`},
	} {
		_, _, err := Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  got error %v, want one containing %q", c.json, err, c.want)
		}
	}
}

// TestConditionsRegistryCoversCond: every field of Cond is a registered
// condition or a combinator, every registered condition is a field, and
// a Cond that sets the field sets that condition and no other.
func TestConditionsRegistryCoversCond(t *testing.T) {
	t.Parallel()
	ct := reflect.TypeOf(Cond{})
	fields := map[string]int{}
	for i := 0; i < ct.NumField(); i++ {
		fields[strings.SplitN(ct.Field(i).Tag.Get("json"), ",", 2)[0]] = i
	}
	for _, name := range ConditionNames() {
		i, ok := fields[name]
		if !ok {
			t.Errorf("condition %q has no field in Cond", name)
			continue
		}
		delete(fields, name)
		var c Cond
		fv := reflect.ValueOf(&c).Elem().Field(i)
		switch fv.Kind() {
		case reflect.Pointer:
			fv.Set(reflect.New(fv.Type().Elem()))
		case reflect.String:
			fv.SetString("relay-1")
		case reflect.Int, reflect.Int64:
			fv.SetInt(1)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Slice:
			fv.Set(reflect.ValueOf([]Cond{{Ledger: 1}}))
		}
		if got := c.set(); len(got) != 1 || got[0] != name {
			t.Errorf("a Cond with only %s set sets %v", name, got)
		}
		if c.String() == "" {
			t.Errorf("condition %s describes itself as nothing", name)
		}
	}
	for name := range fields {
		t.Errorf("Cond field %q is not a registered condition", name)
	}
}
