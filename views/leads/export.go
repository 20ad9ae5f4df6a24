package leads

// ExportHref is the CSV export of the leads the inbox shows: the same view
// and filters (the inbox's Export button).
func (f Filters) ExportHref() string {
	if q := f.Query(f.Status); q != "" {
		return "/leads/export.csv?" + q
	}
	return "/leads/export.csv"
}
