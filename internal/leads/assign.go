package leads

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/db"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
)

// Assignment strategies (docs/ARCHITECTURE.md, "Assignment and first response").
const (
	StrategyRoundRobin = "round_robin"
	StrategyOwner      = "owner"
)

// EventAssigned is the timeline entry of an assignment by a rule.
const EventAssigned = "assigned"

// DefaultFirstResponseMinutes is the first-response time of a tenant that
// never set one.
const DefaultFirstResponseMinutes = 60

// maxRules bounds a tenant's rules: every new lead is tried against them.
const maxRules = 50

// RuleCondition is when a rule matches a new lead; empty matches every
// lead. SourceID is a source id or SourceManual; Field is email, name,
// phone, company or a top-level key of the sender's payload, compared
// with Equals case-insensitively.
type RuleCondition struct {
	SourceID *string `json:"source_id,omitempty"`
	Field    *string `json:"field,omitempty"`
	Equals   *string `json:"equals,omitempty"`
}

// AssignmentRule is one rule: round robin among Members, or a fixed owner.
// Caps are round-robin members' daily caps (leads a day from this rule,
// the day in the tenant's routing zone, Assignment.TimeZone); Escalate
// reassigns a lead whose first response is overdue (escalate.go).
type AssignmentRule struct {
	Name     string         `json:"name"`
	When     RuleCondition  `json:"when"`
	Strategy string         `json:"strategy"`
	Members  []string       `json:"members,omitempty"`
	OwnerID  *string        `json:"owner_id,omitempty"`
	Caps     map[string]int `json:"caps,omitempty"`
	Escalate *Escalation    `json:"escalate,omitempty"`
}

// Escalation is a rule's "after N minutes overdue, reassign to": To is
// EscalateNextMember or a user id.
type Escalation struct {
	AfterMinutes int    `json:"after_minutes"`
	To           string `json:"to"`
}

// EscalateNextMember as Escalation.To: the member after the owner in the
// rule's members (skipping disabled and away ones).
const EscalateNextMember = "next_member"

// maxCap bounds a member's daily cap.
const maxCap = 100000

// Assignment is GET|PUT /api/v1/assignment: the tenant's rules, tried in
// order, the first-response time, and the zone whose midnight starts a
// new day for daily caps ("" is UTC).
type Assignment struct {
	Rules                []AssignmentRule `json:"rules"`
	FirstResponseMinutes int              `json:"first_response_minutes"`
	TimeZone             string           `json:"time_zone"`
}

// Assignment returns the tenant's rules and settings.
func (s *Service) Assignment(ctx context.Context, tenantID string) (Assignment, error) {
	rows, err := assignmentRules(ctx, s.DB, tenantID)
	if err != nil {
		return Assignment{}, err
	}
	minutes, zone, err := assignmentSettings(ctx, s.DB, tenantID)
	if err != nil {
		return Assignment{}, err
	}
	out := Assignment{Rules: make([]AssignmentRule, 0, len(rows)), FirstResponseMinutes: minutes, TimeZone: zone}
	for _, r := range rows {
		out.Rules = append(out.Rules, r.AssignmentRule)
	}
	return out, nil
}

// PutAssignment replaces the tenant's rules and settings in one
// transaction with its audit entry (assignment.changed). Every member and
// owner must be an active user of the tenant (422 naming the field).
// Round-robin positions start again from the first member.
func (s *Service) PutAssignment(ctx context.Context, tenantID string, in Assignment) (Assignment, error) {
	if in.FirstResponseMinutes == 0 {
		in.FirstResponseMinutes = DefaultFirstResponseMinutes
	}
	if in.Rules == nil {
		in.Rules = []AssignmentRule{}
	}
	err := db.InTx(ctx, s.DB, func(tx *sqlx.Tx) error {
		if err := s.validateAssignment(ctx, tx, tenantID, &in); err != nil {
			return err
		}
		now := s.now()
		rows := make([]ruleRow, len(in.Rules))
		for i, r := range in.Rules {
			rows[i] = ruleRow{ID: ids.New(), Position: i, AssignmentRule: r}
		}
		if err := replaceAssignment(ctx, tx, tenantID, rows, in.FirstResponseMinutes, in.TimeZone, now); err != nil {
			return err
		}
		names := make([]string, len(in.Rules))
		for i, r := range in.Rules {
			names[i] = r.Name
		}
		return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "assignment.changed", TargetType: "assignment",
			Detail: map[string]any{"rules": names, "first_response_minutes": in.FirstResponseMinutes, "time_zone": in.TimeZone}})
	})
	if err != nil {
		return Assignment{}, err
	}
	return in, nil
}

func (s *Service) validateAssignment(ctx context.Context, x db.Ext, tenantID string, in *Assignment) error {
	bad := map[string]string{}
	if in.FirstResponseMinutes < 1 || in.FirstResponseMinutes > 7*24*60 {
		bad["first_response_minutes"] = "must be between 1 and 10080"
	}
	if len(in.Rules) > maxRules {
		bad["rules"] = fmt.Sprintf("at most %d rules", maxRules)
	}
	in.TimeZone = strings.TrimSpace(in.TimeZone)
	if in.TimeZone == "UTC" {
		in.TimeZone = ""
	}
	if in.TimeZone != "" {
		if _, err := tenants.ParseTimeZone(in.TimeZone); err != nil {
			bad["time_zone"] = "must be a time zone name such as Europe/Berlin"
		}
	}
	var users []string
	for i := range in.Rules {
		r := &in.Rules[i]
		p := fmt.Sprintf("rules[%d].", i)
		r.Name = strings.TrimSpace(r.Name)
		if r.Name == "" || len(r.Name) > 200 {
			bad[p+"name"] = "is required (at most 200 characters)"
		}
		if v := r.When.SourceID; v != nil && *v != SourceManual && !ids.Valid(*v) {
			bad[p+"when.source_id"] = "must be a source id or \"manual\""
		}
		if (r.When.Field == nil) != (r.When.Equals == nil) {
			bad[p+"when"] = "field and equals go together"
		}
		if v := r.When.Field; v != nil && (strings.TrimSpace(*v) == "" || len(*v) > 100) {
			bad[p+"when.field"] = "must be a field name (at most 100 characters)"
		}
		if v := r.When.Equals; v != nil && len(*v) > 500 {
			bad[p+"when.equals"] = "is too long (at most 500 characters)"
		}
		switch r.Strategy {
		case StrategyRoundRobin:
			if len(r.Members) == 0 {
				bad[p+"members"] = "round robin needs at least one member"
			}
			if r.OwnerID != nil {
				bad[p+"owner_id"] = "only with strategy owner"
			}
			seen := map[string]bool{}
			for _, m := range r.Members {
				if seen[m] {
					bad[p+"members"] = "lists a user twice"
				}
				seen[m] = true
			}
			users = append(users, r.Members...)
			for u, c := range r.Caps {
				if !seen[u] {
					bad[p+"caps"] = "names a user who is not a member (" + Clip(u, 40) + ")"
				}
				if c < 0 || c > maxCap {
					bad[p+"caps"] = fmt.Sprintf("must be between 0 and %d leads a day", maxCap)
				}
			}
		case StrategyOwner:
			if r.OwnerID == nil {
				bad[p+"owner_id"] = "is required with strategy owner"
			} else {
				users = append(users, *r.OwnerID)
			}
			if len(r.Members) > 0 {
				bad[p+"members"] = "only with strategy round_robin"
			}
			if len(r.Caps) > 0 {
				bad[p+"caps"] = "only with strategy round_robin"
			}
			if e := r.Escalate; e != nil && e.To == EscalateNextMember {
				bad[p+"escalate.to"] = "next_member needs strategy round_robin; name a user"
			}
		default:
			bad[p+"strategy"] = "must be round_robin or owner"
		}
	}
	for i := range in.Rules {
		r := &in.Rules[i]
		p := fmt.Sprintf("rules[%d].", i)
		if len(r.Caps) == 0 {
			r.Caps = nil
		}
		e := r.Escalate
		if e == nil {
			continue
		}
		e.To = strings.TrimSpace(e.To)
		if e.AfterMinutes < 1 || e.AfterMinutes > 7*24*60 {
			bad[p+"escalate.after_minutes"] = "must be between 1 and 10080"
		}
		switch {
		case e.To == EscalateNextMember:
		case ids.Valid(e.To):
			users = append(users, e.To)
		default:
			bad[p+"escalate.to"] = "must be next_member or a user id"
		}
	}
	var valid []string
	for _, u := range users {
		if ids.Valid(u) {
			valid = append(valid, u)
		}
	}
	active, err := activeUsers(ctx, x, tenantID, valid)
	if err != nil {
		return err
	}
	for i, r := range in.Rules {
		p := fmt.Sprintf("rules[%d].", i)
		for _, m := range r.Members {
			if u, ok := active[m]; !ok || u.disabled {
				bad[p+"members"] = "must be active users of this tenant (" + Clip(m, 40) + " is not)"
			}
		}
		if r.OwnerID != nil && r.Strategy == StrategyOwner {
			if u, ok := active[*r.OwnerID]; !ok || u.disabled {
				bad[p+"owner_id"] = "is not an active user of this tenant"
			}
		}
		if e := r.Escalate; e != nil && e.To != EscalateNextMember && ids.Valid(e.To) {
			if u, ok := active[e.To]; !ok || u.disabled {
				bad[p+"escalate.to"] = "is not an active user of this tenant"
			}
		}
	}
	if len(bad) > 0 {
		return apperr.InvalidFields(bad)
	}
	return nil
}

// newLeadFacts is what a rule may look at in a new lead.
type newLeadFacts struct {
	SourceID                    string
	Email, Name, Phone, Company string
	Payload                     []byte
	Tags                        []string
}

// assigned is a new lead's owner and the rule that chose it.
type assigned struct {
	OwnerID, OwnerName, RuleID, RuleName string
	At, Due                              time.Time
}

// matches reports whether the rule's condition holds for the lead.
func (r ruleRow) matches(l newLeadFacts) bool {
	if v := r.When.SourceID; v != nil {
		want := *v
		if want == SourceManual {
			want = ""
		}
		if l.SourceID != want {
			return false
		}
	}
	if r.When.Field != nil && r.When.Equals != nil {
		var got string
		switch strings.ToLower(*r.When.Field) {
		case "email":
			got = l.Email
		case "name":
			got = l.Name
		case "phone":
			got = l.Phone
		case "company":
			got = l.Company
		default:
			var m map[string]json.RawMessage
			if json.Unmarshal(l.Payload, &m) != nil {
				return false
			}
			raw, ok := m[*r.When.Field]
			if !ok {
				return false
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw) // a number or a boolean: its JSON text
			}
			got = s
		}
		if !strings.EqualFold(strings.TrimSpace(got), strings.TrimSpace(*r.When.Equals)) {
			return false
		}
	}
	return true
}

// assignNew chooses owners for new leads in the transaction that creates
// them (ls in creation order; nil entries of the result are unassigned):
// planAssign, then take. The worker's batch runs the two apart (the plan
// first, take just before the commit: see PendingLeads).
func assignNew(ctx context.Context, x db.Ext, tenantID string, ls []newLeadFacts, now time.Time) ([]*assigned, error) {
	p, err := planAssign(ctx, x, tenantID, ls, now)
	if err != nil {
		return nil, err
	}
	return p.take(ctx, x, nil)
}

// assignPlan is which rule assigns each new lead, decided without a lock;
// take hands out the round-robin positions.
type assignPlan struct {
	tenantID string
	now      time.Time
	// day is now's day in the tenant's routing zone (dayNumber): the
	// round-robin positions count from its start.
	day     int64
	minutes int
	rules   []ruleRow
	users   map[string]userState
	// rule[i] is the index in rules of the rule that assigns lead i, -1:
	// none.
	rule []int
	// sched[ri] is whom a round-robin rule's day positions go to: its
	// members who are neither disabled nor away, with their daily caps
	// (capSchedule); need[ri] how many positions its leads take.
	sched map[int]capSchedule
	need  map[int]int64
	// pre[ri] is a reservation of need[ri] positions under way apart
	// (prefetch), which take uses instead of reserving then.
	pre map[int]*prefetched
}

// prefetched is a reservation taken apart in a goroutine: r, ok and err
// as reserveApart returned them, once done is closed.
type prefetched struct {
	done chan struct{}
	r    reservation
	ok   bool
	err  error
}

// prefetch starts, on reserve, the reservation apart of each round-robin
// rule that had no reservation left by other batches when planRules read
// it (a rule with some takes those first, in take), so that its round
// trip and commit run while the caller's transaction does other work
// (the worker marks its deliveries processed meanwhile); take waits for
// it and uses all of it. A reservation the transaction does not use (it
// rolls back, or fails before take) is left for a later batch like any
// other (leftReservations).
func (p *assignPlan) prefetch(ctx context.Context, reserve *sqlx.DB) {
	if p == nil || p.rule == nil || reserve == nil || p.pre != nil {
		return
	}
	p.pre = make(map[int]*prefetched, len(p.need))
	for ri, need := range p.need {
		if need <= 0 || p.rules[ri].leftOver {
			continue
		}
		f := &prefetched{done: make(chan struct{})}
		p.pre[ri] = f
		go func(ruleID string) {
			defer close(f.done)
			f.r, f.ok, f.err = reserveApart(ctx, reserve, p.tenantID, ruleID, need, p.day, p.now)
		}(p.rules[ri].ID)
	}
}

// ErrRulesChanged means a round-robin rule the plan chose was replaced
// before its position was taken; re-running the transaction reads the new
// rules.
var ErrRulesChanged = fmt.Errorf("leads: the assignment rules changed meanwhile: %w", db.ErrRetryTx)

// planAssign reads the tenant's rules with the first-response time and
// whether reservations were left (planRules: one indexed read; nothing
// more when it has none) and the users they name, and decides which rule
// assigns each lead: the first that matches and has somebody active (a
// disabled or away member is skipped; a rule with nobody active left, or
// whose members have all reached their daily caps as far as the unlocked
// read of its counter tells, does not match). Leads tagged test are never
// assigned. Nothing is locked: the round-robin positions are taken by
// take.
func planAssign(ctx context.Context, x db.Ext, tenantID string, ls []newLeadFacts, now time.Time) (*assignPlan, error) {
	p := &assignPlan{tenantID: tenantID, now: now}
	if len(ls) == 0 {
		return p, nil
	}
	rules, err := planRules(ctx, x, tenantID, now)
	if err != nil || len(rules) == 0 {
		return p, err
	}
	// Which rules each lead matches, in order.
	matching := make([][]int, len(ls))
	used := map[int]bool{}
	for i, l := range ls {
		if slices.Contains(l.Tags, "test") {
			continue
		}
		for ri, r := range rules {
			if r.matches(l) {
				matching[i] = append(matching[i], ri)
				used[ri] = true
			}
		}
	}
	if len(used) == 0 {
		return p, nil
	}
	var userIDs []string
	for ri := range used {
		r := rules[ri]
		if r.Strategy == StrategyRoundRobin {
			userIDs = append(userIDs, r.Members...)
		} else if r.OwnerID != nil {
			userIDs = append(userIDs, *r.OwnerID)
		}
	}
	users, err := activeUsers(ctx, x, tenantID, userIDs)
	if err != nil {
		return nil, err
	}
	p.rules, p.users = rules, users
	p.day = dayNumber(now, zoneOf(rules[0].zone))
	p.rule = make([]int, len(ls))
	p.sched, p.need = map[int]capSchedule{}, map[int]int64{}
	for ri := range used {
		if r := rules[ri]; r.Strategy == StrategyRoundRobin {
			var base []string
			for _, m := range r.Members {
				if u, ok := users[m]; ok && !u.disabled && !u.away(now) {
					base = append(base, m)
				}
			}
			sc := newCapSchedule(base, r.Caps)
			// Positions of the day already past what the caps allow
			// (read without a lock: take still checks each position).
			pos := int64(0)
			if r.counterDay >= p.day {
				pos = r.counterPos
			}
			if sc.full(pos) {
				sc = capSchedule{}
			}
			p.sched[ri] = sc
		}
	}
	some := false
	for i := range ls {
		p.rule[i] = -1
		for _, ri := range matching[i] {
			r := rules[ri]
			ok := false
			switch r.Strategy {
			case StrategyOwner:
				if r.OwnerID != nil {
					u, found := users[*r.OwnerID]
					ok = found && !u.disabled
				}
			case StrategyRoundRobin:
				if ok = !p.sched[ri].empty(); ok {
					p.need[ri]++
				}
			}
			if ok {
				p.rule[i], some = ri, true
				break
			}
		}
	}
	if some {
		p.minutes = rules[0].minutes
	}
	return p, nil
}

// take hands out the plan's owners. Round-robin positions are counted per
// rule and day (next_pos: the positions handed out since the day began;
// position k goes to the member capSchedule.ownerAt names: the k-th
// active member modulo their number while nobody is capped), and each rule the
// leads use is served in rule id order, so concurrent transactions take
// the rows in one order.
//
// Positions come first from reservations that batches left unused (rolled
// back or died, at least reservationOrphanAge ago: looked for only when
// planRules saw one, then locked in the caller's transaction, deleted or
// shortened there). Then, with reserve nil, the rest is reserved in the
// caller's transaction with one statement, and the position row stays locked to
// the commit: concurrent creating transactions of the rule wait for each
// other from there, so the caller runs take as late as it can. With
// reserve (the worker's batches), the rest is a reservation taken in a
// short transaction of its own on reserve and used (deleted) in the
// caller's: the position row is locked only for that short transaction,
// and a batch that does not commit leaves its positions to a batch after
// reservationOrphanAge, so no position is lost for good and none is handed
// out twice.
func (p *assignPlan) take(ctx context.Context, x db.Ext, reserve *sqlx.DB) ([]*assigned, error) {
	if p.rule == nil {
		return nil, nil
	}
	rrs := slices.Collect(maps.Keys(p.need))
	sort.Slice(rrs, func(a, b int) bool { return p.rules[rrs[a]].ID < p.rules[rrs[b]].ID })
	// positions[ri] are the rule's positions in the order handed out.
	positions := make(map[int][]int64, len(rrs))
	for _, ri := range rrs {
		ruleID, need := p.rules[ri].ID, p.need[ri]
		var left []reservation
		if p.rules[ri].leftOver {
			var err error
			if left, err = leftReservations(ctx, x, p.tenantID, ruleID, p.day, p.now); err != nil {
				return nil, err
			}
		}
		for _, r := range left {
			if need == 0 {
				break
			}
			k := min(need, r.N)
			if err := useReservation(ctx, x, p.tenantID, ruleID, r, k); err != nil {
				return nil, err
			}
			for j := int64(0); j < k; j++ {
				positions[ri] = append(positions[ri], r.Start+j)
			}
			need -= k
		}
		if need == 0 {
			continue
		}
		if reserve == nil {
			start, ok, err := reserveCounter(ctx, x, p.tenantID, ruleID, need, p.day)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, ErrRulesChanged
			}
			for k := int64(0); k < need; k++ {
				positions[ri] = append(positions[ri], start+k)
			}
			continue
		}
		var r reservation
		var ok bool
		var err error
		// A prefetched rule had no left reservations (prefetch), so
		// need is still all of p.need[ri], which the prefetch reserved.
		if f := p.pre[ri]; f != nil {
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r, ok, err = f.r, f.ok, f.err
		} else {
			r, ok, err = reserveApart(ctx, reserve, p.tenantID, ruleID, need, p.day, p.now)
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrRulesChanged
		}
		if err := useReservation(ctx, x, p.tenantID, ruleID, r, need); err != nil {
			return nil, err
		}
		for j := int64(0); j < need; j++ {
			positions[ri] = append(positions[ri], r.Start+j)
		}
	}
	next := make(map[int]int, len(rrs))
	due := p.now.Add(time.Duration(p.minutes) * time.Minute)
	out := make([]*assigned, len(p.rule))
	for i, ri := range p.rule {
		if ri < 0 {
			continue
		}
		r := p.rules[ri]
		var owner string
		if r.Strategy == StrategyOwner {
			owner = *r.OwnerID
		} else {
			var ok bool
			owner, ok = p.sched[ri].ownerAt(positions[ri][next[ri]])
			next[ri]++
			if !ok {
				continue // every member reached their cap meanwhile: stays unassigned
			}
		}
		out[i] = &assigned{OwnerID: owner, OwnerName: p.users[owner].name, RuleID: r.ID, RuleName: r.Name, At: p.now, Due: due}
	}
	return out, nil
}
