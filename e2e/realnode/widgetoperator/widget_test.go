package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	obj, err := decodeObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestConvertWidget(t *testing.T) {
	const meta = `"kind":"Widget","metadata":{"name":"w","namespace":"ns","labels":{"a":"b"}}`
	const status = `"status":{"observedSize":3,"phase":"Reconciled"}`
	cases := []struct {
		name, in, to, want, err string
	}{
		{name: "v1 to v2 moves size to replicas",
			in:   `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `,"spec":{"size":3,"color":"red"},` + status + `}`,
			to:   APIVersion2,
			want: `{"apiVersion":"widgets.olmv1.io/v2",` + meta + `,"spec":{"replicas":3,"color":"red"},` + status + `}`},
		{name: "v2 to v1 moves replicas to size",
			in:   `{"apiVersion":"widgets.olmv1.io/v2",` + meta + `,"spec":{"replicas":10}}`,
			to:   APIVersion1,
			want: `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `,"spec":{"size":10}}`},
		{name: "same version is unchanged",
			in:   `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `,"spec":{"size":0}}`,
			to:   APIVersion1,
			want: `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `,"spec":{"size":0}}`},
		{name: "no size stays absent",
			in:   `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `,"spec":{}}`,
			to:   APIVersion2,
			want: `{"apiVersion":"widgets.olmv1.io/v2",` + meta + `,"spec":{}}`},
		{name: "no spec",
			in:   `{"apiVersion":"widgets.olmv1.io/v2",` + meta + `}`,
			to:   APIVersion1,
			want: `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `}`},
		{name: "large numbers pass unchanged",
			in:   `{"apiVersion":"widgets.olmv1.io/v1",` + meta + `,"spec":{"size":9007199254740993}}`,
			to:   APIVersion2,
			want: `{"apiVersion":"widgets.olmv1.io/v2",` + meta + `,"spec":{"replicas":9007199254740993}}`},
		{name: "unknown target version", in: `{"apiVersion":"widgets.olmv1.io/v1"}`, to: "widgets.olmv1.io/v3",
			err: `widget-operator: apiVersion "widgets.olmv1.io/v3" is not a Widget version (serve widgets.olmv1.io/v1 or widgets.olmv1.io/v2)`},
		{name: "unknown source version", in: `{"apiVersion":"other/v1"}`, to: APIVersion1,
			err: `widget-operator: apiVersion "other/v1" is not a Widget version (serve widgets.olmv1.io/v1 or widgets.olmv1.io/v2)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := mustDecode(t, c.in)
			got, err := convertWidget(in, c.to)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, mustDecode(t, c.want)) {
				data, _ := json.Marshal(got)
				t.Errorf("got  %s\nwant %s", data, c.want)
			}
			if !reflect.DeepEqual(in, mustDecode(t, c.in)) {
				t.Error("the input was modified")
			}
		})
	}
}

func TestValidateWidget(t *testing.T) {
	cases := []struct {
		name, in, err string
	}{
		{name: "v1 in range", in: `{"apiVersion":"widgets.olmv1.io/v1","spec":{"size":10}}`},
		{name: "v1 zero", in: `{"apiVersion":"widgets.olmv1.io/v1","spec":{"size":0}}`},
		{name: "v1 absent is defaulted later", in: `{"apiVersion":"widgets.olmv1.io/v1","spec":{}}`},
		{name: "v1 no spec", in: `{"apiVersion":"widgets.olmv1.io/v1"}`},
		{name: "v1 too large", in: `{"apiVersion":"widgets.olmv1.io/v1","spec":{"size":11}}`,
			err: "widget-operator: spec.size must be between 0 and 10, got 11"},
		{name: "v1 negative", in: `{"apiVersion":"widgets.olmv1.io/v1","spec":{"size":-1}}`,
			err: "widget-operator: spec.size must be between 0 and 10, got -1"},
		{name: "v1 not an integer", in: `{"apiVersion":"widgets.olmv1.io/v1","spec":{"size":2.5}}`,
			err: "widget-operator: spec.size must be an integer between 0 and 10, got 2.5"},
		{name: "v2 in range", in: `{"apiVersion":"widgets.olmv1.io/v2","spec":{"replicas":5}}`},
		{name: "v2 too large", in: `{"apiVersion":"widgets.olmv1.io/v2","spec":{"replicas":12}}`,
			err: "widget-operator: spec.replicas must be between 0 and 10, got 12"},
		{name: "v2 ignores a stray size", in: `{"apiVersion":"widgets.olmv1.io/v2","spec":{"size":99}}`},
		{name: "unknown version", in: `{"apiVersion":"widgets.olmv1.io/v9","spec":{"size":1}}`,
			err: `widget-operator: apiVersion "widgets.olmv1.io/v9" is not a Widget version (serve widgets.olmv1.io/v1 or widgets.olmv1.io/v2)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := validateWidget(mustDecode(t, c.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.err {
				t.Errorf("error = %q, want %q", got, c.err)
			}
		})
	}
}

func TestDefaultWidget(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{name: "v1 no labels, no size", in: `{"apiVersion":"widgets.olmv1.io/v1","metadata":{"name":"w"},"spec":{}}`,
			want: `[{"op":"add","path":"/metadata/labels","value":{"widgets.olmv1.io/defaulted":"true"}},{"op":"add","path":"/spec/size","value":1}]`},
		{name: "v1 other labels, size set", in: `{"apiVersion":"widgets.olmv1.io/v1","metadata":{"name":"w","labels":{"a":"b"}},"spec":{"size":4}}`,
			want: `[{"op":"add","path":"/metadata/labels/widgets.olmv1.io~1defaulted","value":"true"}]`},
		{name: "v1 no spec", in: `{"apiVersion":"widgets.olmv1.io/v1","metadata":{"name":"w","labels":{"a":"b"}}}`,
			want: `[{"op":"add","path":"/metadata/labels/widgets.olmv1.io~1defaulted","value":"true"},{"op":"add","path":"/spec","value":{"size":1}}]`},
		{name: "v1 size null", in: `{"apiVersion":"widgets.olmv1.io/v1","metadata":{"labels":{"widgets.olmv1.io/defaulted":"true"}},"spec":{"size":null}}`,
			want: `[{"op":"add","path":"/spec/size","value":1}]`},
		{name: "v1 label false is corrected", in: `{"apiVersion":"widgets.olmv1.io/v1","metadata":{"labels":{"widgets.olmv1.io/defaulted":"false"}},"spec":{"size":0}}`,
			want: `[{"op":"add","path":"/metadata/labels/widgets.olmv1.io~1defaulted","value":"true"}]`},
		{name: "already defaulted", in: `{"apiVersion":"widgets.olmv1.io/v1","metadata":{"labels":{"widgets.olmv1.io/defaulted":"true"}},"spec":{"size":0}}`,
			want: `null`},
		{name: "v2 defaults replicas", in: `{"apiVersion":"widgets.olmv1.io/v2","metadata":{"name":"w"},"spec":{}}`,
			want: `[{"op":"add","path":"/metadata/labels","value":{"widgets.olmv1.io/defaulted":"true"}},{"op":"add","path":"/spec/replicas","value":1}]`},
		{name: "no metadata", in: `{"apiVersion":"widgets.olmv1.io/v2","spec":{"replicas":2}}`,
			want: `[{"op":"add","path":"/metadata","value":{"labels":{"widgets.olmv1.io/defaulted":"true"}}}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops, err := defaultWidget(mustDecode(t, c.in))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(ops)
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	if _, err := defaultWidget(map[string]any{"apiVersion": "x/v1"}); err == nil {
		t.Error("an unknown apiVersion was defaulted")
	}
}

func TestDesiredStatus(t *testing.T) {
	cases := []struct {
		name string
		obj  map[string]any
		want map[string]any
	}{
		{name: "size set",
			obj: map[string]any{"metadata": map[string]any{"generation": int64(3)}, "spec": map[string]any{"size": int64(7)}},
			want: map[string]any{"observedSize": int64(7), "observedGeneration": int64(3), "phase": "Reconciled",
				"operatorVersion": "1.1.0", "message": "widget-operator 1.1.0 reconciled size 7"}},
		{name: "size absent",
			obj: map[string]any{"metadata": map[string]any{"generation": int64(1)}},
			want: map[string]any{"observedSize": int64(0), "observedGeneration": int64(1), "phase": "Reconciled",
				"operatorVersion": "1.1.0", "message": "widget-operator 1.1.0 reconciled a widget without spec.size (is the mutating webhook installed?)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := desiredStatus(c.obj, "1.1.0"); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
		})
	}
}
