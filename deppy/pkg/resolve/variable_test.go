package resolve

import (
	"reflect"
	"testing"
)

func TestRemoveRewritesReferences(t *testing.T) {
	tests := []struct {
		name string
		c    Constraint
		want []Constraint // constraints left on the subject after removing "gone"
	}{
		{name: "dependency loses the candidate", c: Dependency("gone", "kept"), want: []Constraint{Dependency("kept")}},
		{name: "atMost loses the member", c: AtMost(1, "gone", "kept"), want: []Constraint{AtMost(1, "kept")}},
		{name: "conflict always holds", c: Conflict("gone"), want: []Constraint{}},
		{name: "or with a negated operand always holds", c: Or("gone", false, true), want: []Constraint{}},
		{name: "or becomes mandatory", c: Or("gone", false, false), want: []Constraint{Mandatory()}},
		{name: "implication becomes prohibited", c: Or("gone", true, false), want: []Constraint{Prohibited()}},
		{name: "unrelated constraints stay", c: Dependency("kept"), want: []Constraint{Dependency("kept")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, err := NewVariables(v("subject", tt.c), v("gone"), v("kept"))
			if err != nil {
				t.Fatal(err)
			}
			if n := vars.Remove("gone", "never-there"); n != 1 {
				t.Fatalf("Remove returned %d, want 1", n)
			}
			if vars.Has("gone") || vars.Len() != 2 || vars.Get("kept") == nil {
				t.Fatalf("unexpected set after Remove: %d variables", vars.Len())
			}
			if got := vars.Get("subject").Constraints; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("constraints %+v, want %+v", got, tt.want)
			}
			if err := vars.Validate(); err != nil {
				t.Fatalf("set invalid after Remove: %v", err)
			}
		})
	}
}

func TestRemoveKeepsOrderAndIndex(t *testing.T) {
	vars, _ := NewVariables(v("a"), v("b"), v("c"), v("d"))
	vars.Remove("b")
	var ids []Identifier
	for _, v := range vars.All() {
		ids = append(ids, v.ID)
	}
	if !reflect.DeepEqual(ids, []Identifier{"a", "c", "d"}) {
		t.Fatalf("order %v", ids)
	}
	if vars.Get("d") == nil || vars.Get("d").ID != "d" {
		t.Fatal("index not rebuilt")
	}
	if err := vars.Add(v("b")); err != nil {
		t.Fatalf("re-adding a removed id: %v", err)
	}
}
