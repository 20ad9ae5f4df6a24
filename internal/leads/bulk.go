package leads

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"leadpipe/internal/apperr"
	"leadpipe/internal/audit"
	"leadpipe/internal/idempotency"
	"leadpipe/internal/ids"
	"leadpipe/internal/tenants"
)

// MaxBulk is the most leads one bulk action changes.
const MaxBulk = 500

// BulkSet is what a bulk action does to every listed lead.
type BulkSet struct {
	Status   *string
	OwnerSet bool    // with a nil OwnerID: unassign
	OwnerID  *string // an active user of the tenant
	AddTags  []string
}

// BulkInput is POST /api/v1/leads/bulk.
type BulkInput struct {
	IDs []string // distinct, in the order given
	Set BulkSet
}

// Bulk item outcomes.
const (
	BulkUpdated   = "updated"
	BulkUnchanged = "unchanged"
	BulkNotFound  = "not_found"
)

// BulkItem is one lead's outcome.
type BulkItem struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Version *int   `json:"version,omitempty"`
}

// BulkResult lists every requested id's outcome, in request order.
type BulkResult struct {
	Items []BulkItem `json:"items"`
}

// ParseBulk decodes {"ids":[…],"set":{"status"?,"owner_id"?,"add_tags"?}}.
func ParseBulk(body []byte) (BulkInput, error) {
	m, err := decodeObject(body)
	if err != nil {
		return BulkInput{}, err
	}
	bad := unknownFields(m, "ids", "set")
	var in BulkInput
	var ids []string
	if v, ok := m["ids"]; !ok || isNull(v) {
		bad["ids"] = "is required: 1 to 500 lead ids"
	} else if json.Unmarshal(v, &ids) != nil {
		bad["ids"] = "must be an array of lead ids"
	} else if len(ids) == 0 || len(ids) > MaxBulk {
		bad["ids"] = "must hold 1 to 500 lead ids"
	} else {
		seen := map[string]bool{}
		for _, id := range ids {
			id = strings.TrimSpace(id)
			if id == "" || len(id) > 64 {
				bad["ids"] = "must hold lead ids (non-empty strings)"
				break
			}
			if !seen[id] {
				seen[id] = true
				in.IDs = append(in.IDs, id)
			}
		}
	}
	set, ok := m["set"]
	if !ok || isNull(set) {
		bad["set"] = "is required: an object with status, owner_id and/or add_tags"
	} else {
		sm, err := decodeObject(set)
		if err != nil {
			bad["set"] = "must be an object with status, owner_id and/or add_tags"
		} else {
			for k, v := range sm {
				switch k {
				case "status":
					var st string
					if json.Unmarshal(v, &st) != nil || !ValidStatus(st) {
						bad["set.status"] = "must be one of " + strings.Join(Statuses, ", ")
						continue
					}
					in.Set.Status = &st
				case "owner_id":
					in.Set.OwnerSet = true
					if isNull(v) {
						continue
					}
					var o string
					if json.Unmarshal(v, &o) != nil || strings.TrimSpace(o) == "" {
						bad["set.owner_id"] = "must be a user id or null"
						continue
					}
					o = strings.TrimSpace(o)
					in.Set.OwnerID = &o
				case "add_tags":
					var tags []string
					if json.Unmarshal(v, &tags) != nil || len(tags) == 0 {
						bad["set.add_tags"] = "must be a non-empty array of strings"
						continue
					}
					t, msg := NormalizeTags(tags)
					if msg != "" {
						bad["set.add_tags"] = msg
						continue
					}
					in.Set.AddTags = t
				default:
					bad["set."+k] = "cannot be set in bulk (status, owner_id, add_tags)"
				}
			}
			if len(sm) == 0 {
				bad["set"] = "must change something: status, owner_id or add_tags"
			}
		}
	}
	if len(bad) > 0 {
		return BulkInput{}, apperr.InvalidFields(bad)
	}
	return in, nil
}

// Bulk applies one change to many leads in one transaction: each changed
// lead's version goes up by one and gets the same timeline entries as a
// single edit. The rows are locked (in id order, so two bulk actions never
// deadlock each other) before they are read, so a concurrent single PATCH
// either commits first (and the bulk action applies on top of it) or waits
// and then gets 412 for the version it read. An id that is not the
// tenant's (another tenant's, or none) is reported not_found and changes
// nothing. With an Idempotency-Key the result is stored in the same
// transaction: the same request again returns it without applying twice.
func (s *Service) Bulk(ctx context.Context, tenantID string, actor tenants.Principal, in BulkInput, once idempotency.Once[BulkResult]) (BulkResult, error) {
	res, err := idempotency.InTx(ctx, s.DB, once, func(tx *sqlx.Tx) (BulkResult, error) {
		return s.bulk(ctx, tx, tenantID, actor, in)
	})
	if err == nil && in.Set.OwnerSet && in.Set.OwnerID != nil {
		for _, it := range res.Items {
			if it.Status == BulkUpdated {
				s.announce(tenantID, ChangeReassigned, Lead{ID: it.ID, OwnerID: in.Set.OwnerID}, actor)
			}
		}
	}
	return res, err
}

func (s *Service) bulk(ctx context.Context, tx *sqlx.Tx, tenantID string, actor tenants.Principal, in BulkInput) (BulkResult, error) {
	if in.Set.OwnerID != nil {
		if _, err := s.activeUserName(ctx, tx, tenantID, *in.Set.OwnerID); err != nil {
			return BulkResult{}, apperr.InvalidFields(map[string]string{"set.owner_id": "is not an active user of this tenant"})
		}
	}
	valid := make([]string, 0, len(in.IDs))
	for _, id := range in.IDs {
		if ids.Valid(id) {
			valid = append(valid, id)
		}
	}
	slices.Sort(valid)
	rows, err := lockLeads(ctx, tx, tenantID, valid)
	if err != nil {
		return BulkResult{}, err
	}
	em := s.emitter(tx, tenantID) // the subscriptions are read once for all the leads
	byID := make(map[string]Lead, len(rows))
	for _, l := range rows {
		byID[l.ID] = l
	}
	out := BulkResult{Items: make([]BulkItem, 0, len(in.IDs))}
	for _, id := range in.IDs {
		cur, ok := byID[id]
		if !ok || cur.MergedInto != nil { // a merged lead is edited through its survivor
			out.Items = append(out.Items, BulkItem{ID: id, Status: BulkNotFound})
			continue
		}
		p := PatchInput{Status: in.Set.Status, OwnerSet: in.Set.OwnerSet, OwnerID: in.Set.OwnerID}
		if len(in.Set.AddTags) > 0 {
			tags, msg := NormalizeTags(append(slices.Clone([]string(cur.Tags)), in.Set.AddTags...))
			if msg != "" {
				return BulkResult{}, apperr.InvalidFields(map[string]string{"set.add_tags": "lead " + id + ": " + msg})
			}
			p.Tags = &tags
		}
		next, changed, err := s.applyPatch(ctx, tx, tenantID, cur, actor, false, p, em)
		if err != nil {
			return BulkResult{}, err
		}
		v := next.Version
		item := BulkItem{ID: id, Status: BulkUnchanged, Version: &v}
		if changed {
			item.Status = BulkUpdated
		}
		out.Items = append(out.Items, item)
	}
	return out, recordBulk(ctx, tx, tenantID, in, out)
}

// recordBulk writes the bulk request's one audit row, in its transaction:
// what was set, how many leads changed and which.
func recordBulk(ctx context.Context, tx *sqlx.Tx, tenantID string, in BulkInput, out BulkResult) error {
	changed := []string{}
	for _, it := range out.Items {
		if it.Status == BulkUpdated {
			changed = append(changed, it.ID)
		}
	}
	set := map[string]any{}
	if in.Set.Status != nil {
		set["status"] = *in.Set.Status
	}
	if in.Set.OwnerSet {
		set["owner_id"] = in.Set.OwnerID // nil: unassigned
	}
	if len(in.Set.AddTags) > 0 {
		set["add_tags"] = in.Set.AddTags
	}
	return audit.Record(ctx, tx, tenantID, audit.Entry{Action: "leads.bulk_edited", TargetType: "leads",
		Detail: map[string]any{"count": len(changed), "ids": changed, "requested": len(in.IDs), "set": set}})
}
