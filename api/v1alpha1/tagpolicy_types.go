package v1alpha1

// TagPolicy orders tags that are not semantic versions, as Flux's ImagePolicy does. Exactly one of
// its orders is set.
// +kubebuilder:validation:XValidation:rule="has(self.numerical) != has(self.alphabetical)",message="a tag policy sets exactly one of numerical or alphabetical"
type TagPolicy struct {
	// Numerical orders tags by the number they are, or that filterTags.extract makes of them: a
	// plain decimal such as a build number or a Unix time (no sign, exponent or base), compared
	// exactly. A tag that is no such number is ignored.
	// +optional
	Numerical *TagOrder `json:"numerical,omitempty"`
	// Alphabetical orders tags by their text, or what filterTags.extract makes of it, byte by
	// byte: dates and times written with fixed-width parts (2026.12.02-01).
	// +optional
	Alphabetical *TagOrder `json:"alphabetical,omitempty"`
}

// TagOrder says which end of an order is the newest.
type TagOrder struct {
	// Order is asc (the default: the highest is the newest) or desc (the lowest is).
	// +kubebuilder:validation:Enum=asc;desc
	// +optional
	Order string `json:"order,omitempty"`
}

// Tag orders.
const (
	TagOrderAscending  = "asc"
	TagOrderDescending = "desc"
)

// Ordered says how the policy orders tags, numerical or alphabetical, and whether the lowest is
// the newest.
func (p *TagPolicy) Ordered() (by string, descending bool) {
	by, order := "numerical", p.Numerical
	if p.Alphabetical != nil {
		by, order = "alphabetical", p.Alphabetical
	}
	return by, order != nil && order.Order == TagOrderDescending
}

// TagFilter keeps the tags that match a pattern, and orders them by what it extracts.
type TagFilter struct {
	// Pattern is an RE2 regular expression a tag must match to be a version (anchor it with ^ and
	// $ to match the whole tag), e.g. ^main-[0-9a-f]{7}-(?P<ts>[0-9]+)$. It runs against every
	// listed tag on every look, so it is limited in size.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Pattern string `json:"pattern"`
	// Extract is what a matching tag is ordered by, in the pattern's template syntax ($ts, ${1});
	// each group it names must be in the pattern. Default: the whole tag.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Extract string `json:"extract,omitempty"`
}
