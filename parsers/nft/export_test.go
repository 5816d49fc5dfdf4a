package nft

import "github.com/google/go-cmp/cmp"

// StmtCase is a statement case of stmt_test.go: a rule as nft 1.0.6 lists
// it in a table of family Family, and its JSON statements as nft -j
// prints them.
type StmtCase struct{ Family, Text, JSON string }

// StmtCases gives the external tests the statement cases.
func StmtCases() []StmtCase {
	out := make([]StmtCase, len(stmtCases))
	for i, tc := range stmtCases {
		out[i] = StmtCase{tc.family, tc.text, tc.json}
	}
	return out
}

// CmpElements lets cmp compare the elements of rulesets: their parts are
// unexported, and alike for the same parts however they were read.
var CmpElements = cmp.AllowUnexported(Element{})
