package window

import (
	"errors"
	"testing"
	"time"
)

func at(t *testing.T, zone, value string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04:05", value, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenAndNextOpen(t *testing.T) {
	const berlin = "Europe/Berlin"
	cases := []struct {
		name     string
		schedule string
		duration time.Duration
		zone     string
		now      string // in zone
		open     bool
		next     string // in zone; "" = now
	}{
		{"before the window", "0 3 * * *", 2 * time.Hour, berlin, "2026-12-01 02:59:59", false, "2026-12-01 03:00:00"},
		{"at the opening", "0 3 * * *", 2 * time.Hour, berlin, "2026-12-01 03:00:00", true, ""},
		{"inside", "0 3 * * *", 2 * time.Hour, berlin, "2026-12-01 04:59:59", true, ""},
		{"at the closing", "0 3 * * *", 2 * time.Hour, berlin, "2026-12-01 05:00:00", false, "2026-12-02 03:00:00"},
		{"across midnight, before midnight", "0 23 * * *", 2 * time.Hour, berlin, "2026-12-01 23:30:00", true, ""},
		{"across midnight, after midnight", "0 23 * * *", 2 * time.Hour, berlin, "2026-12-02 00:30:00", true, ""},
		{"across midnight, closed", "0 23 * * *", 2 * time.Hour, berlin, "2026-12-02 01:00:00", false, "2026-12-02 23:00:00"},
		{"weekday window on friday night into saturday", "0 23 * * 5", 3 * time.Hour, berlin, "2026-12-05 01:30:00", true, ""},
		{"weekday window closed on saturday", "0 23 * * 5", 3 * time.Hour, berlin, "2026-12-05 02:00:00", false, "2026-12-11 23:00:00"},
		{"utc by default", "0 3 * * *", time.Hour, "", "2026-12-01 03:30:00", true, ""},
		{"zone matters: 03:00 Berlin is 02:00 UTC", "0 3 * * *", time.Hour, berlin, "2026-12-01 03:30:00", true, ""},
		// 2026-03-29 02:00 CET jumps to 03:00 CEST in Berlin. The window measures elapsed time, so a
		// 2h window that opens at 01:00 closes at 04:00 local time.
		{"spring forward: opened before the jump", "0 1 * * *", 2 * time.Hour, berlin, "2026-03-29 03:30:00", true, ""},
		{"spring forward: closed two real hours later", "0 1 * * *", 2 * time.Hour, berlin, "2026-03-29 04:00:00", false, "2026-03-30 01:00:00"},
		{"spring forward: the window after the jump", "0 4 * * *", time.Hour, berlin, "2026-03-29 03:59:00", false, "2026-03-29 04:00:00"},
		// 2026-10-25 03:00 CEST falls back to 02:00 CET: 01:00 + 3h of elapsed time is 03:00 CET.
		{"fall back: still open after the repeated hour", "0 1 * * *", 3 * time.Hour, berlin, "2026-10-25 02:59:00", true, ""},
		{"fall back: closed after three real hours", "0 1 * * *", 3 * time.Hour, berlin, "2026-10-25 03:00:00", false, "2026-10-26 01:00:00"},
		// A fire time the clocks skip opens the window when they jump; one they repeat opens it once.
		{"spring gap Berlin: opens at the jump", "30 2 * * *", time.Hour, berlin, "2026-03-29 03:00:00", true, ""},
		{"spring gap Berlin: next opening is the jump", "30 2 * * *", time.Hour, berlin, "2026-03-29 01:00:00", false, "2026-03-29 03:00:00"},
		{"spring gap Berlin: one hour of elapsed time", "30 2 * * *", time.Hour, berlin, "2026-03-29 04:00:00", false, "2026-03-30 02:30:00"},
		{"spring gap New York", "30 2 * * *", time.Hour, "America/New_York", "2026-03-08 01:59:00", false, "2026-03-08 03:00:00"},
		{"every 15 minutes for 5", "*/15 * * * *", 5 * time.Minute, berlin, "2026-12-01 10:20:00", false, "2026-12-01 10:30:00"},
		{"month and day", "0 0 1 1 *", 24 * time.Hour, "America/New_York", "2027-01-01 23:59:00", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Parse(tc.schedule, tc.duration, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			zone := tc.zone
			if zone == "" {
				zone = "UTC"
			}
			now := at(t, zone, tc.now)
			if got := w.Open(now); got != tc.open {
				t.Errorf("Open(%s) = %v, want %v", now, got, tc.open)
			}
			want := now
			if tc.next != "" {
				want = at(t, zone, tc.next)
			}
			if got := nextOpen(w, now); !got.Equal(want) {
				t.Errorf("NextOpen(%s) = %s, want %s", now, got, want)
			}
			// The answer does not depend on the zone the clock reports in.
			if got := w.Open(now.UTC()); got != tc.open {
				t.Errorf("Open(%s) in UTC = %v, want %v", now.UTC(), got, tc.open)
			}
		})
	}
}

func TestNilWindowIsAlwaysOpen(t *testing.T) {
	var w *Window
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if !w.Open(now) || !nextOpen(w, now).Equal(now) || w.String() != "always open" {
		t.Error("the absent window must be open now")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name     string
		schedule string
		duration time.Duration
		zone     string
		want     error
	}{
		{"minute out of range", "61 * * * *", time.Hour, "UTC", ErrInvalidSchedule},
		{"four fields", "0 3 * *", time.Hour, "UTC", ErrInvalidSchedule},
		{"six fields", "0 0 3 * * *", time.Hour, "UTC", ErrInvalidSchedule},
		{"descriptor", "@daily", time.Hour, "UTC", ErrInvalidSchedule},
		{"garbage", "tomorrow at three", time.Hour, "UTC", ErrInvalidSchedule},
		{"unknown zone", "0 3 * * *", time.Hour, "Mars/Olympus_Mons", ErrUnknownTimeZone},
		{"zero duration", "0 3 * * *", 0, "UTC", ErrInvalidDuration},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.schedule, tc.duration, tc.zone)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse error = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestRepeatedHourOpensOnce: on the night the clocks fall back, the wall clock shows 02:30 twice;
// the window opens at the first and is closed at the second.
func TestRepeatedHourOpensOnce(t *testing.T) {
	w, err := Parse("30 2 * * *", 30*time.Minute, "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)   // 02:30 CEST
	second := time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC)  // 02:30 CET
	before := time.Date(2026, 10, 24, 23, 50, 0, 0, time.UTC) // 01:50 CEST
	if w.Open(before) || !nextOpen(w, before).Equal(first) {
		t.Errorf("from 01:50 CEST: open %v, next %s, want closed until %s", w.Open(before), nextOpen(w, before), first)
	}
	if !w.Open(first) || w.Open(second) || w.Open(second.Add(10*time.Minute)) {
		t.Errorf("open at first 02:30 = %v, at second = %v", w.Open(first), w.Open(second))
	}
	if got, want := nextOpen(w, second), time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("NextOpen after the repeat = %s, want %s", got, want)
	}
}

// A schedule that never fires is refused, and Open and NextOpen stay bounded for it: before, both
// looped for ever on 30 February and took the manager's only worker with them.
func TestAScheduleThatNeverFires(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		schedule string
		// expected
		wantErr error
	}{
		{name: "30 February never comes", schedule: "0 3 30 2 *", wantErr: ErrNeverFires},
		{name: "31 April never comes", schedule: "0 3 31 4 *", wantErr: ErrNeverFires},
		{name: "29 February comes every four years", schedule: "0 3 29 2 *"},
		{name: "a daily window comes tomorrow", schedule: "0 3 * * *"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Parse(tc.schedule, time.Hour, "Europe/Berlin")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := w.Check(now); !errors.Is(err, tc.wantErr) {
					t.Errorf("Check = %v, want %v", err, tc.wantErr)
				}
				open, next := w.Open(now), nextOpen(w, now)
				if tc.wantErr != nil && (open || !next.IsZero()) {
					t.Errorf("Open = %v, NextOpen = %v, want closed and no next opening", open, next)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the window evaluation does not return")
			}
		})
	}
}

// nextOpen is the earliest time at or after now when the window is open: now itself when it is
// open, otherwise the next fire time, in the window's zone; what a calendar of this window alone
// says.
func nextOpen(w *Window, now time.Time) time.Time {
	if w == nil {
		return now
	}
	d := NewCalendar(Rule{Every: w}).At(now)
	if d.Open {
		return now
	}
	if d.Next.IsZero() {
		return d.Next
	}
	return d.Next.In(w.loc)
}
