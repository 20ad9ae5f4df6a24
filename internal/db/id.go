package db

import "leadpipe/internal/ids"

// NewID is ids.New, kept for the stores that call it by this name.
func NewID() string { return ids.New() }

// ValidID is ids.Valid, kept for the stores that call it by this name.
func ValidID(s string) bool { return ids.Valid(s) }
