package window

import (
	"testing"
	"time"
)

// FuzzWindow: any schedule, duration and zone either fails to parse or gives a window whose
// evaluation returns, with NextOpen now when open and never before now otherwise.
func FuzzWindow(f *testing.F) {
	for _, s := range []string{"0 3 * * *", "0 3 30 2 *", "0 3 29 2 *", "*/5 * * * 1-5", "30 2 * * 0", "61 * * * *"} {
		f.Add(s, int64(60), "Europe/Berlin")
	}
	f.Add("0 2 * * *", int64(1), "America/New_York")
	now := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, schedule string, minutes int64, zone string) {
		w, err := Parse(schedule, time.Duration(minutes)*time.Minute, zone)
		if err != nil {
			return
		}
		_ = w.Check(now)
		open, next := w.Open(now), nextOpen(w, now)
		if open && !next.Equal(now) {
			t.Errorf("open, but NextOpen = %s", next)
		}
		if !open && !next.IsZero() && !next.After(now) {
			t.Errorf("closed, but NextOpen = %s is not after %s", next, now)
		}
	})
}
