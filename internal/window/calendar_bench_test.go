package window

import (
	"testing"
	"time"
)

// BenchmarkAtOfACalendarClosedForEver measures the worst look a tenant's calendar can cost: a
// deny window every minute keeps it closed, and the search for its opening runs to its bound.
func BenchmarkAtOfACalendarClosedForEver(b *testing.B) {
	w, err := Parse("* * * * *", time.Minute, "Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	c := NewCalendar(Rule{Name: "always", Deny: true, Every: w})
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for b.Loop() {
		if c.At(now).Open {
			b.Fatal("open")
		}
	}
}

// BenchmarkAtOfAHolidayCalendar measures an ordinary closed look: nightly windows, weekends and a
// holiday freeze.
func BenchmarkAtOfAHolidayCalendar(b *testing.B) {
	must := func(s string, d time.Duration) *Window {
		w, err := Parse(s, d, "Europe/Berlin")
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	c := NewCalendar(Rule{Name: "nights", Every: must("0 1 * * *", 4*time.Hour)},
		Rule{Name: "weekends", Deny: true, Every: must("0 0 * * 6", 48*time.Hour)},
		Rule{Name: "holidays", Deny: true, From: time.Date(2026, 12, 23, 0, 0, 0, 0, time.UTC), To: time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC)})
	now := time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		if c.At(now).Open {
			b.Fatal("open")
		}
	}
}
