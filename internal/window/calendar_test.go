package window

import (
	"testing"
	"time"
)

func every(t *testing.T, name, schedule string, d time.Duration, zone string, deny bool) Rule {
	t.Helper()
	w, err := Parse(schedule, d, zone)
	if err != nil {
		t.Fatal(err)
	}
	return Rule{Name: name, Deny: deny, Every: w}
}

// office is an admin's calendar (a group of its own) that allows 8 hours from schedule, in Berlin.
func office(t *testing.T, schedule string) Rule {
	r := every(t, "office", schedule, 8*time.Hour, "Europe/Berlin", false)
	r.Group = "RolloutCalendar ops"
	return r
}

func TestCalendar(t *testing.T) {
	const berlin, newYork, tokyo = "Europe/Berlin", "America/New_York", "Asia/Tokyo"
	nights := every(t, "nights", "0 1 * * *", 4*time.Hour, berlin, false) // 01:00-05:00 Berlin
	christmas := Rule{Name: "christmas", Deny: true, From: at(t, berlin, "2026-12-24 00:00:00"), To: at(t, berlin, "2026-12-27 00:00:00")}
	weekends := every(t, "weekends", "0 0 * * 6", 48*time.Hour, berlin, true)
	cases := []struct {
		name  string
		rules []Rule
		zone  string
		now   string
		open  bool
		by    string // the deciding rule; "" for none
		next  string // when closed, when it opens; "" for never (within the search)
	}{
		{name: "no rules: always open", zone: berlin, now: "2026-12-01 12:00:00", open: true},
		{name: "an allow alone is the window", rules: []Rule{nights}, zone: berlin, now: "2026-12-01 02:00:00", open: true, by: "nights"},
		{name: "closed between allows", rules: []Rule{nights}, zone: berlin, now: "2026-12-01 12:00:00", by: "nights", next: "2026-12-02 01:00:00"},
		{name: "a freeze wins over the window", rules: []Rule{nights, christmas}, zone: berlin, now: "2026-12-24 02:00:00", by: "christmas", next: "2026-12-27 01:00:00"},
		{name: "before the freeze: open", rules: []Rule{nights, christmas}, zone: berlin, now: "2026-12-23 02:00:00", open: true, by: "nights"},
		{name: "after a freeze inside the window, the rest of it", rules: []Rule{nights, {Name: "release", Deny: true, From: at(t, berlin, "2026-12-02 03:00:00"), To: at(t, berlin, "2026-12-02 04:00:00")}},
			zone: berlin, now: "2026-12-02 03:30:00", by: "release", next: "2026-12-02 04:00:00"},
		{name: "denies alone: open on a weekday", rules: []Rule{weekends}, zone: berlin, now: "2026-12-04 23:00:00", open: true},
		{name: "denies alone: closed on the weekend until Monday", rules: []Rule{weekends}, zone: berlin, now: "2026-12-05 10:00:00", by: "weekends", next: "2026-12-07 00:00:00"},
		{name: "weekend and window: Monday night", rules: []Rule{nights, weekends}, zone: berlin, now: "2026-12-05 10:00:00", by: "weekends", next: "2026-12-07 01:00:00"},
		{name: "overlapping allows: open in the second after the first ends", rules: []Rule{nights, every(t, "late", "30 4 * * *", 2*time.Hour, berlin, false)},
			zone: berlin, now: "2026-12-01 05:30:00", open: true, by: "late"},
		// 2026-03-29 02:00 CET jumps to 03:00 CEST: a 2h freeze from 01:00 ends at 04:00 CEST.
		{name: "spring forward: a freeze of elapsed time", rules: []Rule{every(t, "backup", "0 1 * * *", 2*time.Hour, berlin, true)},
			zone: berlin, now: "2026-03-29 03:30:00", by: "backup", next: "2026-03-29 04:00:00"},
		// 2026-11-01 02:00 EDT falls back to 01:00 EST in New York: a 1h freeze from 00:30 ends at
		// 01:30 EDT, before the repeated hour; the window at 01:15 opens at its first showing.
		{name: "fall back: the repeated hour opens once", rules: []Rule{every(t, "late", "15 1 * * *", 30*time.Minute, newYork, false)},
			zone: newYork, now: "2026-11-01 00:00:00", by: "late", next: "2026-11-01 01:15:00"},
		{name: "zones apart: an allow in Tokyo, a freeze in New York", rules: []Rule{
			every(t, "tokyo-morning", "0 9 * * *", 3*time.Hour, tokyo, false),
			{Name: "ny-freeze", Deny: true, From: at(t, newYork, "2026-12-01 19:00:00"), To: at(t, newYork, "2026-12-01 21:00:00")}},
			zone: tokyo, now: "2026-12-02 09:30:00", by: "ny-freeze", next: "2026-12-02 11:00:00"},
		// An admin's calendar (another group) restricts a config that has allow windows of its
		// own: both must be open.
		{name: "the config's window open, the admin's closed: closed until both are", rules: []Rule{nights,
			office(t, "0 4 * * *")},
			zone: berlin, now: "2026-12-01 02:00:00", by: "office", next: "2026-12-01 04:00:00"},
		{name: "both open: open", rules: []Rule{nights,
			office(t, "0 4 * * *")},
			zone: berlin, now: "2026-12-01 04:30:00", open: true, by: "nights"},
		{name: "the admin's open, the config's closed: closed until both are, the next night's overlap", rules: []Rule{nights,
			office(t, "0 4 * * *")},
			zone: berlin, now: "2026-12-01 10:00:00", by: "office", next: "2026-12-02 04:00:00"},
		{name: "a one-off allow that is over never opens again", rules: []Rule{{Name: "once", From: at(t, berlin, "2026-11-01 00:00:00"), To: at(t, berlin, "2026-11-02 00:00:00")}},
			zone: berlin, now: "2026-12-01 00:00:00", by: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := at(t, tc.zone, tc.now)
			d := NewCalendar(tc.rules...).At(now)
			by := ""
			if d.By != nil {
				by = d.By.Name
			}
			var want time.Time
			if tc.next != "" {
				want = at(t, tc.zone, tc.next)
			}
			if d.Open != tc.open || by != tc.by || !d.Next.Equal(want) || NewCalendar(tc.rules...).Open(now) != tc.open {
				t.Errorf("At(%s) = open %v by %q next %s; want open %v by %q next %s", now, d.Open, by, d.Next, tc.open, tc.by, want)
			}
			// The answer does not depend on the zone the clock reports in.
			if u := NewCalendar(tc.rules...).At(now.UTC()); u.Open != d.Open || !u.Next.Equal(d.Next) {
				t.Errorf("in UTC: %+v, want %+v", u, d)
			}
		})
	}
}

// A calendar that a deny keeps closed for longer than the search says it does not open, instead
// of searching for ever.
func TestACalendarClosedForEver(t *testing.T) {
	rules := []Rule{every(t, "always", "* * * * *", time.Minute, "UTC", true)}
	if d := NewCalendar(rules...).At(at(t, "UTC", "2026-12-01 00:00:00")); d.Open || !d.Next.IsZero() {
		t.Errorf("%+v, want closed and never opening", d)
	}
}

// NextFit finds the first opening long enough for a check: the rest of an open window, a later
// window, past freezes that cut one short.
func TestNextFit(t *testing.T) {
	const berlin = "Europe/Berlin"
	nights := every(t, "nights", "0 1 * * *", 4*time.Hour, berlin, false) // 01:00-05:00
	release := Rule{Name: "release", Deny: true, From: at(t, berlin, "2026-12-02 02:00:00"), To: at(t, berlin, "2026-12-02 03:00:00")}
	for _, tc := range []struct {
		name  string
		rules []Rule
		now   string
		need  time.Duration
		want  string // "" for none
	}{
		{name: "no rules: now", now: "2026-12-01 12:00:00", need: time.Hour, want: "2026-12-01 12:00:00"},
		{name: "the rest of the window is enough", rules: []Rule{nights}, now: "2026-12-01 02:00:00", need: 3 * time.Hour, want: "2026-12-01 02:00:00"},
		{name: "the rest is too short: the next night", rules: []Rule{nights}, now: "2026-12-01 03:00:00", need: 3 * time.Hour, want: "2026-12-02 01:00:00"},
		{name: "a freeze cuts the next night short: after it", rules: []Rule{nights, release}, now: "2026-12-01 04:00:00", need: 90 * time.Minute,
			want: "2026-12-02 03:00:00"},
		{name: "a check longer than any window: never", rules: []Rule{nights}, now: "2026-12-01 03:00:00", need: 5 * time.Hour},
		{name: "denies alone: until the next deny", rules: []Rule{every(t, "weekends", "0 0 * * 6", 48*time.Hour, berlin, true)},
			now: "2026-12-04 23:00:00", need: 2 * time.Hour, want: "2026-12-07 00:00:00"},
		{name: "two calendars: the overlap of their windows", rules: []Rule{nights,
			office(t, "0 4 * * *")},
			now: "2026-12-01 02:00:00", need: 90 * time.Minute},
		{name: "two calendars: an overlap long enough", rules: []Rule{nights,
			office(t, "0 3 * * *")},
			now: "2026-12-01 00:00:00", need: 90 * time.Minute, want: "2026-12-01 03:00:00"},
	} {
		var want time.Time
		if tc.want != "" {
			want = at(t, berlin, tc.want)
		}
		if got := NewCalendar(tc.rules...).NextFit(at(t, berlin, tc.now), tc.need); !got.Equal(want) {
			t.Errorf("%s: NextFit = %s, want %s", tc.name, got, want)
		}
	}
}
