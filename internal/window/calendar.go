package window

import (
	"fmt"
	"slices"
	"time"
)

// Rule is one window of a calendar: a recurring Window, or a one-off range [From, To). Allow
// rules open the calendar; Deny rules close it over whatever they overlap.
type Rule struct {
	Name string // for messages, e.g. "spec.windows[freeze]"
	Deny bool
	// Group names the calendar the rule belongs to ("" for the config's own windows, else a
	// RolloutCalendar's name): each group's allow rules restrict the others', so one calendar's
	// allow window cannot open another that is closed.
	Group string
	// Exactly one of Every and the range is set.
	Every    *Window
	From, To time.Time
}

// contains reports whether t falls in one of the rule's intervals, and that interval's end.
func (r Rule) contains(t time.Time) (bool, time.Time) {
	if r.Every == nil {
		return !t.Before(r.From) && t.Before(r.To), r.To
	}
	return r.Every.interval(t)
}

// nextStart is the earliest start of one of the rule's intervals after t, or zero.
func (r Rule) nextStart(t time.Time) time.Time {
	if r.Every == nil {
		if r.From.After(t) {
			return r.From
		}
		return time.Time{}
	}
	return r.Every.nextFire(t)
}

// String describes the rule for messages: "window 0 3 * * * Europe/Berlin" for an unnamed one (a
// maintenance window), else "window christmas, which denies 2026-12-24T00:00:00Z to …".
func (r Rule) String() string {
	if r.Name == "" {
		return "window " + r.Every.String()
	}
	what := "allows"
	if r.Deny {
		what = "denies"
	}
	when := fmt.Sprintf("%s to %s", r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	if r.Every != nil {
		when = fmt.Sprintf("%s for %s", r.Every, r.Every.duration)
	}
	return fmt.Sprintf("window %s, which %s %s", r.Name, what, when)
}

// In is t in the zone of the rule (a one-off rule's: UTC), for messages.
func (r Rule) In(t time.Time) time.Time {
	if r.Every != nil {
		return t.In(r.Every.loc)
	}
	return t.UTC()
}

// Calendar says when a rollout may start: while, in each group that has Allow rules, at least one
// of them is open, and no Deny rule is; a deny wins over any allow. The nil or empty Calendar is
// always open.
type Calendar struct {
	rules []Rule
	// groups are the groups that have allow rules, in the order they first appear.
	groups []string
}

// NewCalendar is the calendar of the rules.
func NewCalendar(rules ...Rule) *Calendar {
	c := &Calendar{rules: rules}
	for _, r := range rules {
		if !r.Deny && !slices.Contains(c.groups, r.Group) {
			c.groups = append(c.groups, r.Group)
		}
	}
	return c
}

// maxSteps bounds the search for an opening: each step passes one interval of a rule, and a
// calendar that stays closed longer (a deny every minute) is reported as not opening. The bound
// keeps a tenant's calendar from costing the manager more than a fraction of a second a look.
const maxSteps = 200

// Decision is what a calendar says at one instant.
type Decision struct {
	Open bool
	// By is the rule that decided: the deny that closes it, the allow that opens it, or (closed)
	// the allow it waits for; nil when no rule decided (no allow rules, no deny open).
	By *Rule
	// Next is, when closed, the earliest instant it opens; zero when that is not within the search.
	Next time.Time
}

// Open reports whether the calendar is open at now, without searching for when it opens.
func (c *Calendar) Open(now time.Time) bool {
	if c == nil || len(c.rules) == 0 {
		return true
	}
	if deny, _ := c.denying(now); deny != nil {
		return false
	}
	_, closed := c.allowing(now)
	return closed < 0
}

// At says whether the calendar is open at now, which rule decides, and, when closed, when it opens.
func (c *Calendar) At(now time.Time) Decision {
	if c == nil || len(c.rules) == 0 {
		return Decision{Open: true}
	}
	if deny, _ := c.denying(now); deny != nil {
		next, _ := c.nextOpen(now)
		return Decision{By: deny, Next: next}
	}
	allow, closed := c.allowing(now)
	if closed >= 0 {
		next, by := c.nextOpen(now)
		return Decision{By: by, Next: next}
	}
	return Decision{Open: true, By: allow}
}

// denying is a deny rule open at t, the one that ends last, and its end.
func (c *Calendar) denying(t time.Time) (*Rule, time.Time) {
	var by *Rule
	var end time.Time
	for i := range c.rules {
		if r := &c.rules[i]; r.Deny {
			if in, e := r.contains(t); in && e.After(end) {
				by, end = r, e
			}
		}
	}
	return by, end
}

// allowing is the allow rule open at t of the first group (nil when there are none), and the
// index in c.groups of the first group none of whose allow rules is open at t (-1 when every
// group has one open).
func (c *Calendar) allowing(t time.Time) (*Rule, int) {
	var first *Rule
	for i, g := range c.groups {
		r := c.allowingIn(g, t)
		if r == nil {
			return nil, i
		}
		if first == nil {
			first = r
		}
	}
	return first, -1
}

// allowingIn is an allow rule of group g open at t, or nil.
func (c *Calendar) allowingIn(g string, t time.Time) *Rule {
	for i := range c.rules {
		if r := &c.rules[i]; !r.Deny && r.Group == g {
			if in, _ := r.contains(t); in {
				return r
			}
		}
	}
	return nil
}

// nextOpen is the earliest instant at or after t when the calendar is open, and the allow rule
// it waited for last (nil when none was needed); zero when it is not found within maxSteps.
func (c *Calendar) nextOpen(t time.Time) (time.Time, *Rule) {
	var by *Rule
	for range maxSteps {
		if deny, end := c.denying(t); deny != nil {
			t = end
			continue
		}
		_, closed := c.allowing(t)
		if closed < 0 {
			return t, by
		}
		// The group that is closed opens next at its earliest allow's start.
		var next time.Time
		for i := range c.rules {
			r := &c.rules[i]
			if s := r.nextStart(t); !r.Deny && r.Group == c.groups[closed] && !s.IsZero() && (next.IsZero() || s.Before(next)) {
				next, by = s, r
			}
		}
		if next.IsZero() {
			return time.Time{}, nil
		}
		t = next
	}
	return time.Time{}, nil
}

// maxChain bounds the allow intervals followed one after another to find when an open calendar
// closes, and the openings tried by NextFit.
const maxChain = 50

// ClosesAt is the earliest instant after t when the calendar, open at t, closes: a deny starts,
// or the allow intervals that hold it open (one after another, when they overlap) all end. Zero
// when neither comes within the search, or it never closes.
func (c *Calendar) ClosesAt(t time.Time) time.Time {
	if c == nil {
		return time.Time{}
	}
	var denyStart time.Time
	for _, r := range c.rules {
		if s := r.nextStart(t); r.Deny && !s.IsZero() && (denyStart.IsZero() || s.Before(denyStart)) {
			denyStart = s
		}
	}
	closes := denyStart
	for _, g := range c.groups {
		end := c.groupClosesAt(g, t)
		if end.IsZero() {
			continue
		}
		if closes.IsZero() || end.Before(closes) {
			closes = end
		}
	}
	return closes
}

// groupClosesAt is the earliest instant after t when the allow intervals of group g that hold it
// open at t (one after another, when they overlap) all end; zero when that is past the search.
func (c *Calendar) groupClosesAt(g string, t time.Time) time.Time {
	end := t
	for range maxChain {
		var later time.Time
		for _, r := range c.rules {
			if in, e := r.contains(end); !r.Deny && r.Group == g && in && e.After(later) {
				later = e
			}
		}
		if later.IsZero() {
			return end
		}
		end = later
	}
	return time.Time{}
}

// NextFit is the earliest instant at or after now when the calendar is open and stays open for
// at least d: now itself when it fits. Zero when no opening within the search fits.
func (c *Calendar) NextFit(now time.Time, d time.Duration) time.Time {
	if c == nil || len(c.rules) == 0 {
		return now
	}
	t := now
	for range maxChain {
		open, _ := c.nextOpen(t)
		if open.IsZero() {
			return time.Time{}
		}
		end := c.ClosesAt(open)
		if end.IsZero() || end.Sub(open) >= d {
			return open
		}
		t = end
	}
	return time.Time{}
}
