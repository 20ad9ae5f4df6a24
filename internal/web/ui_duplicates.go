package web

import (
	"context"
	"slices"
	"strings"

	"leadpipe/internal/leads"
	leadviews "leadpipe/views/leads"
)

// duplicateGroups turns a page of the "Possible duplicates" view into sets
// a rep can merge (docs/ARCHITECTURE.md, "Staff pages"): each lead with the
// leads it shares an email or phone with, the reason, the lead a merge
// keeps and whether the reader may merge them. A set is shown once, with
// its newest member: a lead whose set has a newer member off this page was
// listed on an earlier one. One duplicates query per set, not per lead.
func (s *Server) duplicateGroups(ctx context.Context, tenantID string, dir directory, page []leads.Lead, first bool) ([]leadviews.DuplicateGroup, error) {
	who, _ := PrincipalFrom(ctx)
	onPage := make(map[string]bool, len(page))
	for _, l := range page {
		onPage[l.ID] = true
	}
	seen := map[string]bool{}
	out := []leadviews.DuplicateGroup{}
	for _, l := range page {
		if seen[l.ID] {
			continue
		}
		dups, err := s.Leads.Duplicates(ctx, tenantID, l.ID)
		if err != nil {
			return nil, err
		}
		if !first && slices.ContainsFunc(dups, func(d leads.Duplicate) bool { return d.Lead.ID > l.ID && !onPage[d.Lead.ID] }) {
			continue // shown with its newest member on an earlier page
		}
		seen[l.ID] = true
		g := leadviews.DuplicateGroup{Leads: []leadviews.Lead{dir.leadView(l)}}
		var reasons []string
		members := []leads.Lead{l}
		for _, d := range dups {
			for _, r := range d.Reasons {
				if !slices.Contains(reasons, r) {
					reasons = append(reasons, r)
				}
			}
			if seen[d.Lead.ID] {
				continue
			}
			seen[d.Lead.ID] = true
			g.Leads = append(g.Leads, dir.leadView(d.Lead))
			members = append(members, d.Lead)
		}
		if len(g.Leads) < 2 {
			continue // its partners are in an earlier set of this page
		}
		slices.SortStableFunc(g.Leads, func(a, b leadviews.Lead) int { return strings.Compare(b.ID, a.ID) })
		if err := s.addRepeats(ctx, tenantID, g.Leads); err != nil {
			return nil, err
		}
		slices.Sort(reasons)
		g.Reason = leadviews.ReasonText(reasons)
		g.Survivor = leadviews.PickSurvivor(g.Leads)
		g.CanMerge = leads.MayMerge(who, members...) && len(g.Leads)-1 <= leads.MaxMergeOthers
		out = append(out, g)
	}
	return out, nil
}
