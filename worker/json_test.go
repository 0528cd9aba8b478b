package worker_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func flat(t testing.TB, inputs []byte) map[string]json.RawMessage {
	t.Helper()
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(inputs, &m); err != nil {
		t.Fatalf("inputs are not a flat JSON object: %v", err)
	}
	return m
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// firstField is a scalar (non-array) field and its decimal value.
func firstField(t testing.TB, inputs []byte) (string, string) {
	m := flat(t, inputs)
	for _, k := range sortedKeys(m) {
		var s string
		if json.Unmarshal(m[k], &s) == nil && !strings.HasPrefix(s, "0x") {
			return k, s
		}
	}
	for _, k := range sortedKeys(m) {
		return k, "1"
	}
	t.Fatal("no fields")
	return "", ""
}

// firstArrayField is the last element of the first array field (name with a dot).
func firstArrayField(t testing.TB, inputs []byte) (string, string) {
	m := flat(t, inputs)
	keys := sortedKeys(m)
	for i := len(keys) - 1; i >= 0; i-- {
		if strings.Contains(keys[i], ".") {
			return keys[i], string(m[keys[i]])
		}
	}
	t.Fatal("no array fields")
	return "", ""
}

// firstPublic picks a field whose change breaks a constraint (a root or digest).
func firstPublic(t testing.TB, inputs []byte) string {
	m := flat(t, inputs)
	for _, k := range sortedKeys(m) {
		if strings.Contains(strings.ToLower(k), "root") {
			return k
		}
	}
	t.Fatal("no root field")
	return ""
}

func jsonWith(t testing.TB, inputs []byte, key, raw string) string {
	m := flat(t, inputs)
	m[key] = json.RawMessage(raw)
	b, _ := json.Marshal(m)
	return string(b)
}

func jsonWithout(t testing.TB, inputs []byte, key string) string {
	m := flat(t, inputs)
	delete(m, key)
	b, _ := json.Marshal(m)
	return string(b)
}
