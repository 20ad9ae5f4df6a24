package tenants

import (
	"context"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone names resolve on images without /usr/share/zoneinfo

	"leadpipe/internal/apperr"
)

// ParseTimeZone validates an IANA zone name ("Europe/Berlin"). "Local" and
// "" are refused: a stored zone must mean the same on every server.
func ParseTimeZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" || name == "Local" || len(name) > 64 {
		return nil, apperr.InvalidFields(map[string]string{"time_zone": "must be a time zone name such as Europe/Berlin"})
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, apperr.InvalidFields(map[string]string{"time_zone": "is not a known time zone (use a name such as Europe/Berlin)"})
	}
	return loc, nil
}

// Location is the user's own time zone, UTC until one is known (or when a
// stored name no longer resolves).
func (u User) Location() *time.Location {
	if u.TimeZone == "" {
		return time.UTC
	}
	if loc, ok := zones.Load(u.TimeZone); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(u.TimeZone)
	if err != nil {
		return time.UTC
	}
	zones.Store(u.TimeZone, loc)
	return loc
}

// zones caches loaded zones: time.LoadLocation parses the zone file on
// every call, and every signed-in page needs one. Bounded by the IANA list.
var zones sync.Map

// SetTimeZone stores the user's time zone after checking the name.
func (s *Service) SetTimeZone(ctx context.Context, tenantID, userID, name string) error {
	loc, err := ParseTimeZone(name)
	if err != nil {
		return err
	}
	if _, err := getUser(ctx, s.DB, tenantID, userID); err != nil {
		return err
	}
	_, err = updateUserTimeZone(ctx, s.DB, tenantID, userID, loc.String())
	return err
}
