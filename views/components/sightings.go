package components

// SightingsText is the one wording for how often a sender sent something,
// used on every surface that counts a lead's or a delivery's sightings:
// "Received 12× · 3 deliveries, 9 repeats". deliveries are the distinct
// deliveries (each made or updated the lead once); repeats are the
// duplicates of them that changed nothing.
func SightingsText(deliveries, repeats int64) string {
	total := deliveries + repeats
	s := "Received " + formatInt(total) + "×"
	if total == 1 {
		s = "Received once"
	}
	s += " · " + countOf(deliveries, "delivery", "deliveries")
	if repeats > 0 {
		s += ", " + countOf(repeats, "repeat", "repeats")
	}
	return s
}
